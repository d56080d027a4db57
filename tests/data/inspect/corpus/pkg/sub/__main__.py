print("usage: python -m pkg.sub")
