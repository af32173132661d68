"""Shared fixtures: small graphs built in code (tests never read ../shared).

With ``IE_REQUIRE_OPTIONAL=1`` (set by CI's optional-dependency steps) a test skipped because
an optional package failed to import fails instead, so a broken install cannot make the
checks that need numba, gensim, h5py or Spark Connect silently disappear.
"""

from __future__ import annotations

import multiprocessing
import os
import sys

import instant_embedding as ie
import pytest
from helpers import random_edges

_REQUIRE_OPTIONAL = bool(os.environ.get("IE_REQUIRE_OPTIONAL"))

# The forkserver (one per process, started by the first test that uses it) imports numpy and
# the package once: the crash tests fork hundreds of writers from it (`helpers.ForkedScript`).
multiprocessing.set_forkserver_preload(["numpy", "instant_embedding"])


def _missing_import(report) -> bool:
    return report.skipped and "could not import" in str(report.longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if _REQUIRE_OPTIONAL and _missing_import(report):
        report.outcome = "failed"


_skipped_modules: list[str] = []


def pytest_collectreport(report):
    if _REQUIRE_OPTIONAL and _missing_import(report):
        _skipped_modules.append(report.nodeid)
        report.outcome = "failed"


def pytest_sessionfinish(session, exitstatus):
    if _skipped_modules and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def karate() -> ie.Graph:
    return ie.datasets.karate()


@pytest.fixture
def random_graph() -> ie.Graph:
    src, dst = random_edges(300, 1500, seed=7)
    return ie.Graph.from_edges(src, dst, num_nodes=300)


@pytest.fixture
def saved_random_graph(tmp_path, random_graph) -> ie.Graph:
    path = tmp_path / "random.graph"
    random_graph.save(path)
    return ie.Graph.open(path)


# ---------------------------------------------------------------- engine runtimes
# One local Spark session and one local Ray runtime for the whole run: the engine suite and
# the engine-specific tests share them (each costs seconds to start).


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("instant-embedding-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local")))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def ray_local():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    pytest.importorskip("pyarrow")
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            ignore_reinit_error=True,
        )
    except Exception as e:  # no shared memory, no free port, ...
        pytest.skip(f"Ray cannot start here: {e}")
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()
