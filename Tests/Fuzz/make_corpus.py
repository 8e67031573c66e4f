#!/usr/bin/env python3
"""Builds the seed corpora in Tests/Fuzz/Corpus from real files: a cache made with the
blobcache tool (journal, pack segment, loose blob, snapshot, config, stats), plus zlib and LZ4
payloads made by zlib and the lz4 tool. Each input starts with the mode byte FuzzTarget reads
(Sources/BlobCache/Fuzzing/FuzzTarget.swift).

    python3 Tests/Fuzz/make_corpus.py .build/debug/blobcache
"""
import os, shutil, struct, subprocess, sys, tempfile, zlib

tool = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "Corpus")
work = tempfile.mkdtemp(prefix="blobcache-corpus-")
cache = os.path.join(work, "cache")


def run(*args, stdin=None):
    subprocess.run([tool, "--dir", cache, *args], input=stdin, check=True, stdout=subprocess.DEVNULL)


def save(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# A cache with enough entries for a snapshot (written at close past 64 KiB of journal), some
# packed values, one small loose one, a removal, and saved limits.
tree = os.path.join(work, "tree")
os.makedirs(tree)
for n in range(1000):
    with open(os.path.join(tree, "file-%04d" % n), "wb") as f:
        f.write((b"value %d " % n) * (n % 7 + 1))
run("import", tree, "--prefix", "t/")
run("put", "hello", stdin=b"hello\n" * 500)
run("--pack-threshold", "0", "put", "loose", stdin=b"loose value " * 200)
run("rm", "t/file-0001")
run("config", "--max-size", "2G", "--max-entries", "100000")
run("get", "hello")  # a hit, for the stats file

journal = read(os.path.join(cache, "journal"))
segments = sorted(p for p in os.listdir(os.path.join(cache, "packs")) if p.endswith(".pack"))
segment = read(os.path.join(cache, "packs", segments[0]))
loose = next(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(cache, "objects")) for f in fs)

# A value longer than a piece, set from a stream: a pieced blob (format 4), compressible so the
# file stays small.
run("put", "pieced", stdin=(b"pieced value " * 200000)[:2500000])
pieced = next(p for p in (os.path.join(d, f) for d, _, fs in os.walk(os.path.join(cache, "objects")) for f in fs)
              if read(p)[4] == 4)

# journal: mode 0 is the file as it is; mode 1 the records as (length, kind, payload) triples
# that the target frames with valid CRCs.
save("journal", "journal", b"\x00" + journal)
save("journal", "journal-torn", b"\x00" + journal[: len(journal) - 7])
records, offset = [], 32
while offset + 9 <= len(journal):
    length, _ = struct.unpack_from("<II", journal, offset)
    body = journal[offset + 8: offset + 8 + length + 1]
    records.append(body)
    offset += 9 + length
sealed = b"".join(bytes([len(body) - 1]) + body for body in records if len(body) - 1 < 256)
save("journal", "records-sealed", b"\x01" + sealed[:60000])

# packRecord: a segment as adoption scans it, one record, and sealed payloads.
save("packRecord", "segment", b"\x00" + segment[:65000])
first_length = struct.unpack_from("<I", segment, 16 + 32)[0]
save("packRecord", "record", b"\x01" + segment[16: 16 + 40 + first_length])
value = b"compressible " * 300
for codec, payload in ((0, value), (2, zlib.compress(value, 6))):
    save("packRecord", "sealed-codec%d" % codec, b"\x02" + struct.pack("<Q", len(value)) + bytes([codec]) + payload)
lz4_payload = subprocess.run(["lz4", "-c", "-q", "--content-size"], input=value, stdout=subprocess.PIPE, check=True).stdout
save("packRecord", "sealed-codec1", b"\x02" + struct.pack("<Q", len(value)) + b"\x01" + lz4_payload)

# looseBlob: the file with and without an index record, and sealed payloads.
# (`file` and `file-with-record` were saved in format 2 and are kept: a release writes the
# current format, saved as file-format3*, and reads both.)
save("looseBlob", "file-format3", b"\x00" + read(loose))
save("looseBlob", "file-format3-with-record", b"\x01" + read(loose))
save("looseBlob", "file-format4", b"\x00" + read(pieced))
save("looseBlob", "file-format4-with-record", b"\x01" + read(pieced))
save("looseBlob", "file-format4-forged", b"\x03" + read(pieced))
for codec, payload in ((0, value), (1, lz4_payload), (2, zlib.compress(value, 9))):
    save("looseBlob", "sealed-codec%d" % codec, b"\x02" + struct.pack("<Q", len(value)) + bytes([codec]) + payload)

# snapshot: as written, and sealed (the target recomputes its CRC and hash).
snapshot = read(os.path.join(cache, "index"))
save("snapshot", "index", b"\x00" + snapshot)
save("snapshot", "index-sealed", b"\x01" + snapshot)

save("config", "config", read(os.path.join(cache, "config")))
save("config", "config-suffixes", b"# limits\nmax-size = 500Mi\nmax-entries = 10\n")
save("stats", "stats", read(os.path.join(cache, "stats")))
for name, text in (("plain", "1234"), ("decimal", "1.5G"), ("binary", "64KiB"), ("tera", "2T")):
    save("size", name, text.encode())

shutil.rmtree(work)
print("corpus written to", out)
