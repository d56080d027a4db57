"""environment/roots.py: the directory a drifted path's relpath is relative to."""

from __future__ import annotations

from driftscan.core.values import Target, TargetKind
from driftscan.environment.roots import root_of

V = "/envs/v"
SITE = f"{V}/lib/python3.11/site-packages"


def test_site_packages_first_then_the_venv_then_the_parent():
    target = Target(TargetKind.VENV, V, (SITE, "/opt/extra"))
    assert root_of(target, f"{SITE}/pkg/mod.py") == SITE
    assert root_of(target, SITE) == SITE
    assert root_of(target, "/opt/extra/x.py") == "/opt/extra"
    assert root_of(target, f"{V}/bin/tool") == V  # a script: relative to the venv
    assert root_of(target, "/elsewhere/dump.pt") == "/elsewhere"  # outside every root: its own directory


def test_a_sibling_with_a_common_prefix_is_not_inside():
    target = Target(TargetKind.VENV, V, (SITE,))
    assert root_of(target, f"{SITE}-old/mod.py") == V  # site-packages-old is not site-packages
    assert root_of(target, "/envs/v2/bin/tool") == "/envs/v2/bin"


def test_bare_site_packages_have_no_venv():
    target = Target(TargetKind.SITE_PACKAGES, None, ("/srv/deps",))
    assert root_of(target, "/srv/deps/a/b.py") == "/srv/deps"
    assert root_of(target, "/srv/bin/tool") == "/srv/bin"
