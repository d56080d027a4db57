"""The hardened file-system boundary: everything the audited tree controls is read, walked and
written through here (``reader``: type before open, size caps, refusal outside a root;
``atomic``: writes that never leave half a file; ``paths``: paths as people and JSON see them;
``helpers``: forked helper processes and when they are allowed)."""
