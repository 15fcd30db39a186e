"""Where geographically restricted diseases are acquired: a curated, cited table laid onto the knowledge graph's
disease nodes (attribute ``endemic_regions``; source ``kg-endemic``).

Why: a returning traveller's differential depends on where they have been. Ebola virus disease, Chagas disease or
Kyasanur forest disease fit fever, headache and a rash as well as dengue does; a clinician sets them aside for a
traveller back from Thailand because they are not acquired there. None of the open sources says where a disease
occurs in a form the ranker can read, so ``endemic_regions.yaml`` (next to this module) writes it down for the
infections whose range is limited to some regions of the world, each entry naming the reference it follows. The
regions are eight broad ones, generously drawn (a region is listed where the disease is endemic or regularly
acquired): a wrong exclusion would weigh a possible diagnosis down, a wrong inclusion only fails to help.

File format (YAML)::

    version: 1
    regions: [africa, asia, europe, middle_east, north_america, central_america_caribbean, south_america, oceania]
    references:
      cdc_yellow: "Centers for Disease Control and Prevention. CDC Yellow Book 2024 ..."
    diseases:
    - disease: {id: DOID:4325, name: Ebola virus disease}
      reference: cdc_yellow
      regions: [africa]

The graph builder (:func:`knowledge.kg.build.ingest_endemic_regions`) sets the disease node's ``endemic_regions``
(sorted region keys) and ``endemic_reference``; the ranker weighs a disease down, softly, when the patient has been
only in regions it is not acquired in (``agents.ranker.demographic_factor``). A disease without an entry is never
weighed by place. Clinical review: change the YAML file, never the code.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .cardinal import read_table

SOURCE = "kg-endemic"
PATH = Path(__file__).with_name("endemic_regions.yaml")
LICENSE = "Apache-2.0 (ClinicalRAG; curated after the cited references)"
FORMAT_VERSION = 1
REGIONS = ("africa", "asia", "europe", "middle_east", "north_america", "central_america_caribbean",
           "south_america", "oceania")


class EndemicFormatError(ValueError):
    """The endemic-regions file does not follow the format; the message names the file and the entry."""


@dataclass(frozen=True)
class EndemicEntry:
    disease_id: str
    disease_name: str
    regions: tuple[str, ...]
    reference: str      # the full citation


def read(path: Path | str = PATH) -> list[EndemicEntry]:
    """The entries of an endemic-regions file; :class:`EndemicFormatError` naming the file (and the entry) when it
    cannot be read or breaks the format: unknown keys, a region outside :data:`REGIONS` (the file's ``regions``
    must list exactly those), an undefined reference, a disease twice, no region or every region."""
    path = Path(path)
    data, refs, rows = read_table(path, FORMAT_VERSION, EndemicFormatError)
    if tuple(data.get("regions") or ()) != REGIONS:
        raise EndemicFormatError(f"{path.name}: 'regions' must be exactly {list(REGIONS)}")
    out: list[EndemicEntry] = []
    seen: set[str] = set()
    for i, row in enumerate(rows, start=1):
        where = f"{path.name}, disease entry {i}"
        if not isinstance(row, dict) or set(row) != {"disease", "reference", "regions"}:
            raise EndemicFormatError(f"{where}: needs exactly 'disease', 'reference' and 'regions'")
        d = row["disease"]
        if not isinstance(d, dict) or set(d) != {"id", "name"} or ":" not in str(d["id"] or "") \
                or not str(d["name"] or "").strip():
            raise EndemicFormatError(f"{where}: 'disease' must be {{id: DOID:..., name: ...}}, not {d!r}")
        did, name = str(d["id"]).strip(), " ".join(str(d["name"]).split())
        where = f"{path.name}, {did} ({name})"
        if did in seen:
            raise EndemicFormatError(f"{where}: the disease is listed twice")
        seen.add(did)
        citation = refs.get(row["reference"])
        if not isinstance(citation, str) or not citation.strip():
            raise EndemicFormatError(f"{where}: reference {row['reference']!r} is not defined under 'references'")
        regions = row["regions"]
        if not isinstance(regions, list) or not regions:
            raise EndemicFormatError(f"{where}: 'regions' must be a non-empty list")
        unknown = [r for r in regions if r not in REGIONS]
        if unknown:
            raise EndemicFormatError(f"{where}: unknown region(s) {unknown}; known: {list(REGIONS)}")
        if len(set(regions)) == len(REGIONS):
            raise EndemicFormatError(f"{where}: a disease acquired in every region is not geographically restricted")
        out.append(EndemicEntry(did, name, tuple(sorted(set(regions))), " ".join(citation.split())))
    return out


__all__ = ["SOURCE", "PATH", "LICENSE", "FORMAT_VERSION", "REGIONS", "EndemicFormatError", "EndemicEntry", "read"]
