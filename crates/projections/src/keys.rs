//! Keys of projection records scoped to a project.

/// `project \0 name`: project ids never contain NUL (they are subject tokens), so keys of
/// different projects never collide and a project's records share a prefix.
pub(crate) fn project_scoped_key(project_id: &str, name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(project_id.len() + name.len() + 1);
    key.extend_from_slice(project_id.as_bytes());
    key.push(0);
    key.extend_from_slice(name.as_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_do_not_share_prefixes() {
        assert!(!project_scoped_key("ab", "c").starts_with(&project_scoped_key("a", "")));
        assert!(project_scoped_key("a", "x").starts_with(&project_scoped_key("a", "")));
    }
}
