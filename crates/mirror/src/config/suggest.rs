//! "Did you mean …?" for misspelled keys, enum values and cluster names.

/// The candidate closest to `word`, if it is close enough to be a plausible typo.
///
/// `-`, `.` and `_` are treated alike, so MM2-style `bootstrap.servers` finds
/// `bootstrap_servers`; comparison ignores ASCII case.
pub fn did_you_mean<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let norm = normalize(word);
    let limit = (norm.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (edit_distance(&norm, &normalize(c)), c))
        .filter(|(dist, _)| *dist <= limit)
        .min_by_key(|(dist, _)| *dist)
        .map(|(_, c)| c)
}

fn normalize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '-' || c == '.' {
                '_'
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn suggests_close_keys_only() {
        let keys = ["bootstrap_servers", "client_id", "request_timeout"];
        assert_eq!(
            did_you_mean("bootstrap_server", keys),
            Some("bootstrap_servers")
        );
        assert_eq!(
            did_you_mean("bootstrap.servers", keys),
            Some("bootstrap_servers")
        );
        assert_eq!(did_you_mean("clientid", keys), Some("client_id"));
        assert_eq!(did_you_mean("colour", keys), None);
    }

    #[test]
    fn distance_basics() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    proptest! {
        #[test]
        fn distance_is_a_metric(a in "[a-c]{0,8}", b in "[a-c]{0,8}", c in "[a-c]{0,8}") {
            prop_assert_eq!(edit_distance(&a, &b), edit_distance(&b, &a));
            prop_assert_eq!(edit_distance(&a, &a), 0);
            prop_assert!(edit_distance(&a, &c) <= edit_distance(&a, &b) + edit_distance(&b, &c));
        }
    }
}
