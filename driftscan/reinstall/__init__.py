"""What a reinstall will do, and keeping the work across it: ``plan`` (scope and prediction per
drift, the steps) with ``expect`` (the user's expectations), ``checkpoint`` (all drift saved
outside the tree), ``restore`` (package files back from verified originals), ``reapply`` (a
checkpoint's fixes back after a reinstall or upgrade) with ``excise`` (the injected debug code
removed statement by statement), ``dumpledger`` (the dumps each checkpoint recorded), and
``guard`` (the checkpoint before an install command and the check after it)."""
