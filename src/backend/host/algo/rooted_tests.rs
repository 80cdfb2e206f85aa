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
fn the_root_comes_first_seen_from_it() {
    let g = Group {
        members: vec![10, 11, 12, 13, 14],
        me: 1,
    };
    let r = FromRoot::new(&g, 3);
    let seen: Vec<usize> = (0..5).map(|v| r.member(v)).collect();
    assert_eq!(seen, vec![13, 14, 10, 11, 12]);
    assert_eq!((r.me(), r.member(r.me())), (3, 11));
    let zero = FromRoot::new(&g, 0);
    assert_eq!((zero.me(), zero.member(4)), (1, 14));
    assert_eq!(FromRoot::new(&g, 1).me(), 0);
    // A root past the size wraps.
    assert_eq!(FromRoot::new(&g, 8).member(0), 13);
}

#[test]
fn a_subtree_cut_at_the_wrap_lands_on_its_blocks_in_group_order() {
    for n in 1..=9 {
        for root in 0..n {
            let members: Vec<usize> = (0..n).collect();
            let g = Group { members, me: 0 };
            let rg = FromRoot::new(&g, root);
            let mut schedules = vec![];
            for v in 1..n {
                schedules.push((v, 1));
                schedules.push((v, subtree_blocks(v, n)));
            }
            for (v, blocks) in schedules {
                let (first, rest) = root_parts(v, blocks, n, root, 1);
                let placed: Vec<usize> = first.chain(rest.clone().unwrap_or(0..0)).collect();
                let want: Vec<usize> = (v..v + blocks).map(|w| (w + root) % n).collect();
                assert_eq!(placed, want, "n {n} root {root} v {v}");
                let (cf, cr) = parent_parts(&rg, v, blocks, 3);
                assert_eq!(
                    (cf.start, cr.as_ref().map_or(cf.end, |r| r.end)),
                    (0, 3 * blocks)
                );
                if parent_of(v) == 0 {
                    // Both ends of a message to the root cut it at the same block.
                    let before = placed.len() - rest.map_or(0, |r| r.len());
                    assert_eq!(cf.len() / 3, before, "n {n} root {root} v {v}");
                } else {
                    assert!(
                        cr.is_none(),
                        "n {n} root {root} v {v}: inner messages are whole"
                    );
                }
            }
        }
    }
    // Of 4 ranks, the subtree of rotated 2 is groups 0, 1 from root 2 (whole, after the wrap)
    // and groups 3, 0 from root 1 (cut after one block); a single block is never cut.
    assert_eq!(before_wrap(2, 2, 4, 2), 2);
    assert_eq!(before_wrap(2, 2, 4, 1), 1);
    assert_eq!(before_wrap(1, 1, 4, 3), 1);
    assert_eq!(before_wrap(4, 3, 7, 0), 3);
}

#[test]
fn a_binomial_root_lists_every_childs_parts_once_and_covers_all_but_its_block() {
    let b = 3;
    for n in 1..=9 {
        for root in 0..n {
            let count = messages_from_children(n, root);
            let mut covered = vec![0u32; n * b];
            let mut children = Vec::new();
            for i in 0..count {
                let (child, part) = from_child(n, root, b, i);
                assert!(child > 0 && child < n, "n {n} root {root} message {i}");
                children.push(child);
                part.for_each(|byte| covered[byte] += 1);
            }
            // Smallest child first, a child's two parts one after the other.
            assert!(
                children.windows(2).all(|w| w[0] <= w[1]),
                "n {n} root {root}"
            );
            for (byte, &c) in covered.iter().enumerate() {
                let own = byte / b == root;
                assert_eq!(c, u32::from(!own), "n {n} root {root} byte {byte}");
            }
            assert_eq!(from_child(n, root, b, count), (0, 0..0));
        }
    }
}
