import pdb


def run(fn):
    try:
        return fn()
    except Exception:
        pdb.post_mortem()


def write_report(text):
    with open("/tmp/report.txt", "w") as f:
        f.write(text)
