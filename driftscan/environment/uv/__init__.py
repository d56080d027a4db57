"""uv's cache: where it is (``cache``), the links an environment has into it (``links``), and
its archives checked against their own RECORDs (``archives``)."""
