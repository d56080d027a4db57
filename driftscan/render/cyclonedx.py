"""CycloneDX 1.6 JSON: an SBOM of the audited environment with each drifted file's verified state.

Built with cyclonedx-python-lib (the library pip-audit writes its SBOMs with), imported only when
this format renders: the command line's start-up never pays for it (tests/contract/test_imports.py).

- ``metadata.component``: the audited target, an ``application`` (as ``cyclonedx-py environment``
  describes a Python environment), named after the venv's directory; its full path and kind are
  ``driftscan:target:*`` properties. It depends on every distribution.
- One ``library`` component per distribution, with its ``pkg:pypi`` purl. Where a lockfile
  (``--lock``) or direct_url.json names the wheel by digest (the report's ``provenance``), that
  SHA-256 is the component's hash, the wheel's file name its purl's ``file_name`` qualifier, and
  the verdict is in ``driftscan:provenance:*`` properties: ``verified`` (the wheel was found by that
  digest and its RECORD compared row by row with the installed one), ``source``, ``lock``,
  ``rows-rewritten`` and, when not verified, ``reason``.
- One ``file`` component per drift, nested under its distribution's component, or at the top level
  when no distribution owns it (an added module, a model directory's file, dumps). driftscan's state
  is in ``driftscan:`` properties: ``drift:kind``, ``drift:scope``, ``drift:prediction``,
  ``provenance:verified`` (``true`` when an original was found and verified for the file's
  distribution, or the drift was compared with one; a ``record-rewritten`` file: its wheel's verdict,
  with the wheel's own row as ``driftscan:wheel-record:<algorithm>``) and, when known, ``provenance:source``. The
  file's actual hash (RECORD's urlsafe base64, as hex) is the component's hash; the hash its
  RECORD expects is ``driftscan:record:<algorithm>``.

Output is deterministic: components are sorted (by the library), the timestamp is the report's
``generated_at`` and the serial number a UUID5 of the report's content.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import posixpath
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from .._version import __version__
from ..core.errors import DriftscanError

if TYPE_CHECKING:
    from cyclonedx.model import HashType, Property
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component

    from ..report.contract import DistributionRef, DriftOut, ProvenanceOut, Report

#: A namespace of driftscan's own for the serial numbers it derives (uuid5 of the report's content).
SERIAL_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/driftscan/driftscan#cyclonedx")

#: CycloneDX 1.6's longest ``version``; a longer one is left to the purl and ``driftscan:version``.
MAX_VERSION = 1024

#: The digest length of each RECORD algorithm CycloneDX names, and its CycloneDX name.
_ALGORITHMS: dict[str, tuple[int, str]] = {"sha256": (32, "SHA-256"), "sha384": (48, "SHA-384"),
                                           "sha512": (64, "SHA-512")}


class NotAnSbom(DriftscanError, ValueError):
    """The report cannot be written as CycloneDX (a timestamp that is not ISO 8601)."""


def record_hash_hex(value: object) -> tuple[str, str] | None:
    """RECORD's ``sha256=<urlsafe base64, unpadded>`` as (algorithm, hex), or None when it is not one
    whose digest decodes to the algorithm's length."""
    if not isinstance(value, str) or "=" not in value:
        return None
    algorithm, _, encoded = value.partition("=")
    known = _ALGORITHMS.get(algorithm.lower())
    if known is None or not encoded.isascii():
        return None
    try:
        digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):
        return None
    return (algorithm.lower(), digest.hex()) if len(digest) == known[0] else None


def _timestamp(report: Report) -> datetime:
    text = report.generated_at
    try:
        stamp = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise NotAnSbom(f"the report's generated_at is not an ISO 8601 time: {text!r}") from None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)


def serial_number(report: Report) -> uuid.UUID:
    """The same report gives the same serial number; another report another one."""
    return uuid.uuid5(SERIAL_NAMESPACE, hashlib.sha256(report.model_dump_json().encode()).hexdigest())


def _target_name(report: Report) -> str:
    t = report.target
    where = t.venv or next(iter(t.site_packages), None) or next(iter(t.model_dirs), None)
    return (posixpath.basename(where.rstrip("/")) or where) if where else "environment"


def _prop(name: str, value: object) -> Property:
    from cyclonedx.model import Property

    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return Property(name=f"driftscan:{name}", value=text)


def _dist_key(ref: DistributionRef) -> tuple[str, str]:
    return ref.name, ref.version


def _library(ref: DistributionRef, bom_ref: str, prov: ProvenanceOut | None = None) -> Component:
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.component import Component, ComponentType
    from packageurl import PackageURL

    wheel = prov.wheel if prov is not None and prov.wheel and prov.wheel.endswith(".whl") else None
    purl = PackageURL(type="pypi", name=ref.name, version=ref.version or None,
                      qualifiers={"file_name": wheel} if wheel else None)
    props = [_prop("installer", ref.installer)] if ref.installer else []
    hashes = []
    if prov is not None:
        props += [_prop("provenance:verified", prov.verified), _prop("provenance:source", prov.source),
                  _prop("provenance:rows-rewritten", len(prov.rows))]
        if prov.lock:
            props.append(_prop("provenance:lock", prov.lock))
        if prov.reason:
            props.append(_prop("provenance:reason", prov.reason))
        if prov.wheel_sha256:
            hashes.append(HashType(alg=HashAlgorithm.SHA_256, content=prov.wheel_sha256))
    version: str | None = ref.version or None
    if version is not None and len(version) > MAX_VERSION:  # the schema's limit: whole in the purl and a property
        props.append(_prop("version", version))
        version = None
    return Component(type=ComponentType.LIBRARY, name=ref.name, version=version, purl=purl,
                     bom_ref=bom_ref, properties=props, hashes=hashes)


def _hashes(drift: DriftOut) -> list[HashType]:
    from cyclonedx.model import HashAlgorithm, HashType

    found = record_hash_hex(drift.actual.get("hash"))
    if found is None:
        return []
    algorithm, hex_digest = found
    return [HashType(alg=HashAlgorithm(_ALGORITHMS[algorithm][1]), content=hex_digest)]


def _file(drift: DriftOut, bom_ref: str, verified: bool, source: str | None) -> Component:
    from cyclonedx.model.component import Component, ComponentType

    props = [_prop("drift:kind", drift.kind.value), _prop("drift:scope", drift.scope.value),
             _prop("drift:prediction", drift.prediction.value), _prop("drift:path", drift.path),
             _prop("provenance:verified", verified)]
    if source:
        props.append(_prop("provenance:source", source))
    if drift.accepted is not None:
        props.append(_prop("drift:accepted", True))
    expected = record_hash_hex(drift.expected.get("hash"))
    if expected is not None:
        props.append(_prop(f"record:{expected[0]}", expected[1]))
    wheel_row = record_hash_hex(drift.expected.get("row"))  # record-rewritten: the wheel's own row
    if wheel_row is not None:
        props.append(_prop(f"wheel-record:{wheel_row[0]}", wheel_row[1]))
    installed_row = record_hash_hex(drift.actual.get("row"))
    if installed_row is not None:
        props.append(_prop(f"record:{installed_row[0]}", installed_row[1]))
    return Component(type=ComponentType.FILE, name=drift.relpath, bom_ref=bom_ref, hashes=_hashes(drift),
                     properties=props)


def _provenance(report: Report, drift: DriftOut) -> tuple[bool, str | None]:
    """Whether an original was found and verified for the drift's distribution, and its source."""
    if drift.pristine is not None:
        return True, drift.pristine.source
    if drift.distribution is None:
        return False, None
    if drift.kind.value == "record-rewritten":  # compared with the wheel its lock names by digest
        proven = next((p for p in report.provenance or [] if (p.distribution, p.version) ==
                       (drift.distribution.name, drift.distribution.version)), None)
        if proven is not None:
            return proven.verified, proven.source
    row = next((p for p in report.pristine if p.distribution == drift.distribution.name
                and p.version == drift.distribution.version), None)
    return (row is not None and row.source is not None), (row.source if row is not None else None)


def build_bom(report: Report) -> Bom:
    """The report as a ``cyclonedx.model.bom.Bom``."""
    from cyclonedx.model.bom import Bom, BomMetaData
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.model.tool import ToolRepository

    t = report.target
    root_props = [_prop("target:path", p) for p in [t.venv] if p]
    root_props += [_prop("target:site-packages", p) for p in t.site_packages]
    root_props += [_prop("target:model-dir", p) for p in t.model_dirs]
    if t.kind:
        root_props.append(_prop("target:kind", t.kind))
    if t.python_version:
        root_props.append(_prop("target:python-version", t.python_version))
    if report.hostname:
        root_props.append(_prop("hostname", report.hostname))
    root = Component(type=ComponentType.APPLICATION, name=_target_name(report), bom_ref="driftscan:target",
                     properties=root_props)
    tools = ToolRepository(components=[Component(type=ComponentType.APPLICATION, name="driftscan",
                                                 version=report.tool.version or __version__,
                                                 bom_ref="driftscan:tool")])
    bom = Bom(serial_number=serial_number(report),
              metadata=BomMetaData(timestamp=_timestamp(report), tools=tools, component=root))

    refs = list(report.distributions or []) + [d.distribution for d in report.drifts if d.distribution]
    proven = {(p.distribution, p.version): p for p in report.provenance or []}
    libraries: dict[tuple[str, str], Component] = {}
    for ref in refs:
        if _dist_key(ref) not in libraries:
            libraries[_dist_key(ref)] = _library(ref, f"dist:{len(libraries)}:{ref.name}@{ref.version}",
                                                 proven.get(_dist_key(ref)))
    for n, drift in enumerate(report.drifts):
        verified, source = _provenance(report, drift)
        component = _file(drift, f"file:{n}:{drift.path}", verified, source)
        if drift.distribution is not None:
            libraries[_dist_key(drift.distribution)].components.add(component)
        else:
            bom.components.add(component)
    for library in libraries.values():
        bom.components.add(library)
    bom.register_dependency(root, libraries.values())
    return bom


def render_cyclonedx(report: Report) -> str:
    from cyclonedx.output.json import JsonV1Dot6

    return JsonV1Dot6(build_bom(report)).output_as_string(indent=2) + "\n"
