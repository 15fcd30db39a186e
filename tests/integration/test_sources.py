"""Data acquisition: mirror copies, HTTP downloads (resume, interruption), checksums, manifest, CLI.

Uses the real mirror (found with ``knowledge.paths.default_mirror()``) and a real HTTP server on
127.0.0.1 that supports Range requests.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from knowledge import paths, sources

SMALL = "do-disease-symptom"     # 127 KB
SMALL2 = "pharmacotherapydb"     # 75 KB


@pytest.fixture(scope="module")
def mirror() -> Path:
    m = paths.default_mirror()
    if m is None:
        pytest.skip("no data mirror configured (set CLINICALRAG_DATA_MIRROR to a folder of <host>/<path> files)")
    for sid in (SMALL, SMALL2):
        if not (m / sources.get(sid).host_path).is_file():
            pytest.skip(f"mirror {m} lacks {sid}")
    return m


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    monkeypatch.setenv("CLINICALRAG_HOME", str(h))
    return h


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith((".part", ".tmp"))] if folder.exists() else []


# ------------------------------------------------------------------------------------------ selection
def test_resolve_ids():
    default = sources.resolve_ids(None)
    assert "medquad" in default and "hpo" in default and "medqa" not in default
    assert sources.resolve_ids("all") == list(sources.CATALOG)
    assert sources.resolve_ids("medqa, hsdn,medqa") == ["medqa", "hsdn"]
    with pytest.raises(ValueError, match="unknown source 'nope'"):
        sources.resolve_ids(["hsdn", "nope"])


def test_only_medquad_is_lenient():
    lenient = [s.id for s in sources.CATALOG.values() if not s.checksum_strict]
    assert lenient == ["medquad"]


# ------------------------------------------------------------------------------------------ mirror
def test_fetch_from_mirror(home, mirror):
    res = sources.fetch([SMALL, SMALL2, "hpo"], mirror=mirror, progress=False)
    assert [r.status for r in res] == ["mirrored", "mirrored", "ok"], [r.message for r in res]
    for r in res[:2]:
        src = sources.get(r.id)
        assert r.path == home / "raw" / src.host_path
        assert _sha(r.path) == src.sha256 == r.sha256
        assert r.path.stat().st_size == src.size
        assert not _leftovers(r.path.parent)
    assert res[2].path.is_dir()

    man = json.loads((home / "raw" / "manifest.json").read_text())
    assert man[SMALL]["sha256"] == sources.get(SMALL).sha256
    assert man[SMALL]["origin"] == "mirror" and man[SMALL]["verified"] is True
    assert re.match(r"\d{4}-\d\d-\d\dT", man[SMALL]["fetched_at"])

    again = sources.fetch([SMALL, SMALL2], mirror=mirror, progress=False)
    assert [r.status for r in again] == ["cached", "cached"]

    rows = {r["id"]: r for r in sources.status()}
    assert rows[SMALL]["present"] and rows[SMALL]["verified"] is True
    assert rows[SMALL]["size"] == sources.get(SMALL).size and rows[SMALL]["license"] == "CC0-1.0"
    assert rows["medqa"]["present"] is False and rows["medqa"]["verified"] is None
    assert rows["hpo"]["present"] is True

    sums = sources.checksums([SMALL, SMALL2])
    assert sums == {SMALL: sources.get(SMALL).sha256, SMALL2: sources.get(SMALL2).sha256}


def test_ensure_uses_mirror_env_and_detects_tampering(home, mirror, monkeypatch):
    monkeypatch.setenv("CLINICALRAG_DATA_MIRROR", str(mirror))
    p = sources.ensure(SMALL)
    assert _sha(p) == sources.get(SMALL).sha256
    # a local copy altered after the fact is not trusted: ensure() fetches a verified one again
    p.write_bytes(b"tampered")
    p2 = sources.ensure(SMALL)
    assert p2 == p and _sha(p) == sources.get(SMALL).sha256


def test_corrupt_mirror_file_is_refused_and_good_copy_kept(home, mirror, tmp_path):
    src = sources.get(SMALL)
    good = sources.fetch([SMALL], mirror=mirror, progress=False)[0]
    assert good.status == "mirrored"

    bad_mirror = tmp_path / "bad-mirror"
    bad = bad_mirror / src.host_path
    bad.parent.mkdir(parents=True)
    data = bytearray((mirror / src.host_path).read_bytes())
    data[1000] ^= 0xFF                        # one flipped byte
    bad.write_bytes(bytes(data))

    res = sources.fetch([SMALL], mirror=bad_mirror, force=True, progress=False)[0]
    assert res.status == "failed" and not res.ok
    assert "checksum mismatch" in res.message and str(bad) in res.message
    assert "previous copy kept" in res.message
    assert _sha(good.path) == src.sha256      # the previous good copy is untouched
    assert not _leftovers(good.path.parent)

    # no previous copy: nothing at all appears under the final name
    res2 = sources.fetch([SMALL2], mirror=bad_mirror, progress=False)[0]
    assert res2.status == "failed"
    bad2 = bad_mirror / sources.get(SMALL2).host_path
    bad2.parent.mkdir(parents=True, exist_ok=True)
    bad2.write_bytes(b"not the real file\n")
    res3 = sources.fetch([SMALL2], mirror=bad_mirror, progress=False)[0]
    assert res3.status == "failed" and "checksum mismatch" in res3.message
    dest2 = sources.local_path(SMALL2)
    assert not dest2.exists() and not _leftovers(dest2.parent)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_missing_file_error_names_url_and_mirror_path(home, tmp_path, monkeypatch):
    empty_mirror = tmp_path / "empty-mirror"
    empty_mirror.mkdir()
    src = dataclasses.replace(sources.get(SMALL), url=f"http://127.0.0.1:{_closed_port()}/data/disease-symptom.tsv")
    monkeypatch.setitem(sources.CATALOG, SMALL, src)

    res = sources.fetch([SMALL], mirror=empty_mirror, progress=False, timeout=5)[0]
    assert res.status == "failed"
    assert src.url in res.message
    assert str(empty_mirror / src.host_path) in res.message
    assert not sources.local_path(SMALL).exists()

    monkeypatch.setenv("CLINICALRAG_DATA_MIRROR", str(empty_mirror))
    with pytest.raises(FileNotFoundError) as exc:
        sources.ensure(SMALL)
    assert src.url in str(exc.value) and str(empty_mirror / src.host_path) in str(exc.value)


def test_missing_mirror_folder_is_an_error(home, tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        sources.fetch([SMALL], mirror=tmp_path / "nowhere", progress=False)


# ------------------------------------------------------------------------------------------ HTTP
class _Server:
    """A static file server on 127.0.0.1 with Range support, serving files under ``root``. While
    ``cut_at`` is set, a response announces the full length but stops after ``cut_at`` bytes and drops
    the connection (an interrupted download)."""

    def __init__(self, root: Path, cut_at: int | None = None):
        self.root, self.cut_at, self.requests = root, cut_at, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):
                outer.requests.append((self.path, self.headers.get("Range")))
                f = outer.root / self.path.lstrip("/")
                if not f.is_file():
                    self.send_error(404)
                    return
                data = f.read_bytes()
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    m = re.fullmatch(r"bytes=(\d+)-", rng)
                    start = int(m.group(1))
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if outer.cut_at is not None:
                    self.wfile.write(body[:outer.cut_at])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def served(tmp_path, mirror):
    """A server folder holding a real source file (from the mirror)."""
    root = tmp_path / "www"
    src = sources.get(SMALL2)
    f = root / "files" / "indications.tsv"
    f.parent.mkdir(parents=True)
    shutil.copyfile(mirror / src.host_path, f)
    with _Server(root) as srv:
        yield srv, f


def _point(monkeypatch, sid: str, url: str, **kw) -> sources.Source:
    src = dataclasses.replace(sources.get(sid), url=url, **kw)
    monkeypatch.setitem(sources.CATALOG, sid, src)
    return src


def test_http_download(home, served, monkeypatch):
    srv, f = served
    src = _point(monkeypatch, SMALL2, f"http://127.0.0.1:{srv.port}/files/indications.tsv")
    res = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res.status == "fetched", res.message
    assert res.path == home / "raw" / src.host_path and _sha(res.path) == src.sha256
    assert srv.requests == [("/files/indications.tsv", None)]
    assert not _leftovers(res.path.parent)
    man = sources.read_manifest()[SMALL2]
    assert man["origin"] == "network" and man["url"] == src.url and man["verified"] is True
    assert sources.fetch([SMALL2], mirror=None, progress=False)[0].status == "cached"
    assert len(srv.requests) == 1           # cached: no second request


def test_http_resume_from_part_file(home, served, monkeypatch):
    srv, f = served
    src = _point(monkeypatch, SMALL2, f"http://127.0.0.1:{srv.port}/files/indications.tsv")
    dest = sources.local_path(SMALL2)
    dest.parent.mkdir(parents=True)
    part = dest.with_name(dest.name + ".part")
    part.write_bytes(f.read_bytes()[:30_000])

    res = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res.status == "fetched", res.message
    assert srv.requests == [("/files/indications.tsv", "bytes=30000-")]
    assert _sha(dest) == src.sha256 and not part.exists()


def test_http_resume_with_wrong_prefix_is_refused_then_recovers(home, served, monkeypatch):
    srv, f = served
    src = _point(monkeypatch, SMALL2, f"http://127.0.0.1:{srv.port}/files/indications.tsv")
    dest = sources.local_path(SMALL2)
    dest.parent.mkdir(parents=True)
    part = dest.with_name(dest.name + ".part")
    part.write_bytes(b"x" * 30_000)           # garbage that is not a prefix of the file

    res = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res.status == "failed" and "checksum mismatch" in res.message and src.url in res.message
    assert not dest.exists() and not part.exists()
    res2 = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res2.status == "fetched" and _sha(dest) == src.sha256


def test_http_interrupted_download_leaves_no_final_file_and_resumes(home, served, monkeypatch):
    srv, f = served
    src = _point(monkeypatch, SMALL2, f"http://127.0.0.1:{srv.port}/files/indications.tsv")
    srv.cut_at = 20_000
    dest = sources.local_path(SMALL2)
    part = dest.with_name(dest.name + ".part")

    res = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res.status == "failed"
    assert "resume" in res.message
    assert not dest.exists()
    assert part.exists() and part.read_bytes() == f.read_bytes()[:part.stat().st_size]
    assert 0 < part.stat().st_size < f.stat().st_size

    have = part.stat().st_size
    srv.cut_at = None
    res2 = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res2.status == "fetched", res2.message
    assert srv.requests[-1] == ("/files/indications.tsv", f"bytes={have}-")
    assert _sha(dest) == src.sha256 and not part.exists()


def test_http_checksum_mismatch_strict_vs_lenient(home, served, monkeypatch):
    srv, f = served
    url = f"http://127.0.0.1:{srv.port}/files/indications.tsv"
    wrong = "0" * 64
    _point(monkeypatch, SMALL2, url, sha256=wrong)
    res = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    dest = sources.local_path(SMALL2)
    assert res.status == "failed" and "checksum mismatch" in res.message and wrong in res.message
    assert not dest.exists() and not _leftovers(dest.parent)

    # a host that regenerates its files (like GitHub codeload): network mismatch is a warning only
    _point(monkeypatch, SMALL2, url, sha256=wrong, checksum_strict=False)
    res2 = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res2.status == "fetched" and "checksum mismatch" in res2.message and "accepted" in res2.message
    assert dest.read_bytes() == f.read_bytes()
    row = sources.status([SMALL2])[0]
    assert row["present"] and row["verified"] is False
    # ...and that accepted copy is reused rather than downloaded again
    n = len(srv.requests)
    assert sources.fetch([SMALL2], mirror=None, progress=False)[0].status == "cached"
    assert len(srv.requests) == n


def test_http_404_names_url(home, served, monkeypatch):
    srv, _ = served
    src = _point(monkeypatch, SMALL2, f"http://127.0.0.1:{srv.port}/files/missing.tsv")
    res = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res.status == "failed" and "HTTP 404" in res.message and src.url in res.message
    assert "no mirror configured" in res.message


# ------------------------------------------------------------------------------------------ CLI
def test_cli_data_commands(home, mirror, tmp_path, monkeypatch, capsys):
    from clinicalrag.cli import main

    assert main(["data", "fetch", "--sources", SMALL, "--mirror", str(mirror), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert SMALL in out and "mirrored" in out
    assert sources.local_path(SMALL).is_file()

    assert main(["data", "status", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[SMALL]["present"] and rows[SMALL]["verified"] is True
    assert rows["medqa"]["present"] is False

    assert main(["data", "sources"]) == 0
    out = capsys.readouterr().out
    assert "medquad" in out and "CC-BY-4.0" in out and "Ben Abacha" in out

    assert main(["data", "fetch", "--sources", "nope"]) == 2
    assert "unknown source 'nope'" in capsys.readouterr().err

    empty = tmp_path / "empty"
    empty.mkdir()
    _point(monkeypatch, SMALL2, f"http://127.0.0.1:{_closed_port()}/x.tsv")
    assert main(["data", "fetch", "--sources", SMALL2, "--mirror", str(empty), "--no-progress",
                 "--timeout", "5"]) == 1
    assert "failed" in capsys.readouterr().out


def test_http_complete_part_file_is_finalised(home, served, monkeypatch):
    srv, f = served
    src = _point(monkeypatch, SMALL2, f"http://127.0.0.1:{srv.port}/files/indications.tsv")
    dest = sources.local_path(SMALL2)
    dest.parent.mkdir(parents=True)
    part = dest.with_name(dest.name + ".part")
    part.write_bytes(f.read_bytes())          # a download that finished but was never renamed

    res = sources.fetch([SMALL2], mirror=None, progress=False, timeout=10)[0]
    assert res.status == "fetched", res.message
    assert srv.requests == [("/files/indications.tsv", f"bytes={f.stat().st_size}-")]   # answered 416
    assert _sha(dest) == src.sha256 and not part.exists()
