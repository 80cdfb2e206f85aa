use super::*;

#[test]
fn the_floor_starts_where_the_curve_reaches_nine_tenths_of_its_top() {
    // busbw 1, 10, 95, 100, 92: saturated from the third size; its floor is the lowest after.
    let curve: Curve = vec![
        (1, 1.0, 2.0),
        (2, 10.0, 2.1),
        (4, 95.0, 3.0),
        (8, 100.0, 5.0),
        (16, 92.0, 9.0),
    ];
    assert_eq!(saturated(&curve), Some((4, 92.0)));
    // Latency: sizes within twice the smallest time (2.0): up to 4 B, the largest time 3.0.
    assert_eq!(latency_bound(&curve), Some((4, 3.0)));
    // No bandwidth (busbw 0 at world 1): no floor; times still bound the latency.
    let flat: Curve = vec![(8, 0.0, 5.0), (16, 0.0, 5.5)];
    assert_eq!(saturated(&flat), None);
    assert_eq!(latency_bound(&flat), Some((16, 5.5)));
    assert_eq!(latency_bound(&vec![(8, 1.0, f64::NAN)]), None);
}

#[test]
fn sizes_give_a_factor_only_where_they_grow_by_one() {
    assert_eq!(
        size_keys(&[8, 16, 32]),
        "min_bytes = 8\nmax_bytes = 32\nfactor = 2\n"
    );
    assert_eq!(
        size_keys(&[1024, 4096, 16384]),
        "min_bytes = 1024\nmax_bytes = 16384\nfactor = 4\n"
    );
    // Not geometric (rounded sizes): the ends only, the sweep's default factor between.
    assert_eq!(size_keys(&[8, 16, 40]), "min_bytes = 8\nmax_bytes = 40\n");
    assert_eq!(size_keys(&[64]), "min_bytes = 64\nmax_bytes = 64\n");
    assert_eq!(size_keys(&[]), "");
    assert_eq!(median([3.0, f64::NAN, 1.0, 2.0].into_iter()), 2.0);
    assert_eq!(median([4.0, 1.0].into_iter()), 2.5);
}
