#!/usr/bin/env python3
"""Checks that the native peers replay the calls peers.py and the Swift runner replay, on a small
corpus made here, and that render_markdown gives the performance document's section.

    python3 Benchmarks/native/test_peers.py        # about 10 s; skips the C parts without liblmdb-dev
"""
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import compare  # noqa: E402
import peers  # noqa: E402


def make_corpus(directory):
    """A corpus with the real one's files: 40 small 'files', W2's 10,000 blobs, a W5 trace."""
    rng = random.Random(7)
    files = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(40)]
    offset = 0
    with open(os.path.join(directory, "manifest.tsv"), "w") as manifest, \
            open(os.path.join(directory, "concat.bin"), "wb") as concat:
        manifest.write("path\tsize\toffset\tmd5\n")
        for n, data in enumerate(files):
            manifest.write(f"dir/file-{n:03}.txt\t{len(data)}\t{offset}\t{compare.md5_hex(data)}\n")
            concat.write(data)
            offset += len(data)
    with open(os.path.join(directory, "synth_4k.bin"), "wb") as f:
        f.write(rng.randbytes(4096 * 10_000))
    ops = [("P" if rng.random() < 0.3 else "G", rng.randrange(40)) for _ in range(400)]
    with open(os.path.join(directory, "w5_trace.tsv"), "w") as f:
        f.write("# w5 trace: test\n# warmup\t150\n# ops\t250\n")
        f.writelines(f"{kind}\t{index}\n" for kind, index in ops)


class NativePeers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            cls.lmdb = peers.compile_native("lmdb_bench")
        except peers.Failure as failure:
            raise unittest.SkipTest(str(failure))
        cls.corpus = tempfile.TemporaryDirectory(prefix="peers-test-corpus-")
        make_corpus(cls.corpus.name)

    @classmethod
    def tearDownClass(cls):
        cls.corpus.cleanup()

    def run_lmdb(self, mode, workloads):
        with tempfile.TemporaryDirectory(prefix="peers-test-work-") as work:
            results = peers.run_native(self.lmdb, mode, self.corpus.name, workloads, os.path.join(work, "w"))
        return {r["workload"]: r for r in results}

    def test_w2_mixed_replays_the_python_sequence(self):
        expected = sum(index for put, index in peers.mixed_indices() if not put)
        for mode in ("txn", "batch"):
            result = self.run_lmdb(mode, ["w2mixed"])["W2.mixed"]
            self.assertEqual(result["note"], f"sequence {expected}")
            self.assertEqual(result["hitRatio"], 1.0)
            self.assertEqual(result["ops"], peers.MIXED_OPS)

    def test_w5_without_a_cap_hits_what_the_trace_has_put(self):
        ceiling = compare.w5_ceiling(self.corpus.name)
        for mode in ("txn", "batch"):
            result = self.run_lmdb(mode, ["w5nocap"])["W5.nocap"]
            self.assertEqual(result["ops"], 250)
            self.assertAlmostEqual(result["hitRatio"], ceiling, places=6)

    def test_w1_reads_back_every_byte_it_wrote(self):
        result = self.run_lmdb("txn", ["w1"])
        self.assertEqual(result["W1.put"]["bytes"], result["W1.get"]["bytes"])
        self.assertEqual(result["W1.get"]["ops"], 40)


class Report(unittest.TestCase):
    def data(self, note_of_rawfs="sequence 1"):
        def results(scale, note):
            return [compare.measure("W2.put", 10, 1 / scale, 40960), compare.measure("W2.get", 10, 0.5 / scale, 40960),
                    dict(compare.measure("W2.mixed", 10, 1 / scale, 40960, 1.0), note=note)]
        return {"runs": 1, "command": "python3 Benchmarks/peers.py --runs 1",
                "samples": {"blobcache": [results(3, "sequence 1")], "lmdb": [results(1, "sequence 1")],
                            "rocksdb": [results(2, "sequence 1")], "rawfs": [results(1, note_of_rawfs)]},
                "limits": [{"md5MBps": 700, "lz4DecodeMBps": 3000, "lz4Ratio": 2.1, "memcpyMBps": 9000, "ddMBps": 5000}]}

    def test_markdown_has_one_table_with_ratios_limits_and_the_command(self):
        text = peers.render_markdown(self.data())
        rows = [line for line in text.splitlines() if line.startswith("| W2.")]
        self.assertEqual([row.split(" | ")[0] for row in rows], ["| W2.put", "| W2.get", "| W2.mixed"])
        self.assertIn("| workload | unit | BlobCache | LMDB (txn per op) | RocksDB (default) | raw files |", text)
        self.assertTrue(rows[0].endswith("| 3.00× | 1.50× |"), rows[0])
        self.assertIn("| MD5 (OpenSSL), 1 MiB blocks | 700 |", text)
        self.assertIn("W2.get ≥ 2× RocksDB (default): 1.50× (missed)", text)
        self.assertIn("    python3 Benchmarks/peers.py --runs 1", text)

    def test_engines_that_replayed_other_calls_are_named(self):
        self.assertEqual(peers.check_same_calls(self.data()["samples"]), [])
        problems = peers.check_same_calls(self.data(note_of_rawfs="sequence 2")["samples"])
        self.assertEqual(len(problems), 1)
        self.assertIn("rawfs", problems[0])


if __name__ == "__main__":
    unittest.main()
