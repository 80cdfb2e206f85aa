use super::*;

#[test]
fn subtrees_partition_the_ranks_below_each_parent() {
    for n in 1..=17 {
        assert_eq!(subtree_blocks(0, n), n);
        for v in 1..n {
            let blocks = subtree_blocks(v, n);
            assert!(blocks >= 1 && v + blocks <= n, "n {n} v {v}");
            // A subtree is the rank and its children's subtrees, back to back.
            let mut next = v + 1;
            let mut mask = 1;
            while mask < blocks {
                assert_eq!(v + mask, next, "n {n} v {v}");
                next += subtree_blocks(v + mask, n);
                mask <<= 1;
            }
            assert_eq!(next, v + blocks, "n {n} v {v}");
        }
    }
    assert_eq!(subtree_blocks(4, 6), 2);
    assert_eq!(subtree_blocks(4, 8), 4);
    assert_eq!(subtree_blocks(6, 7), 1);
}

#[test]
fn the_root_comes_first_in_the_rotated_group() {
    let g = Group {
        members: vec![10, 11, 12, 13, 14],
        me: 1,
    };
    let r = g.rooted(3);
    assert_eq!(r.members, vec![13, 14, 10, 11, 12]);
    assert_eq!(r.me, 3);
    assert_eq!(r.members[r.me], 11);
    assert_eq!(g.rooted(0), g);
    assert_eq!(g.rooted(1).me, 0);
}
