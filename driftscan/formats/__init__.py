"""On-disk formats, pure reading and writing: ``record`` (a wheel's RECORD and its hashes),
``manifest`` (the snapshot format), ``patch`` (-p0 unified diffs, exact application and the
three-way merge), ``jsondiff`` (a JSON change as paths), ``tomlfile`` (TOML read as data),
``lfs`` (git LFS pointer files)."""
