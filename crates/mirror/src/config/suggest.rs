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
mod tests;
