import pytest


@pytest.fixture(scope="session")
def spark():
    """ONE local[2] SparkSession for the whole test session (the JVM start is slow)."""
    pyspark = pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession
    s = (SparkSession.builder.master("local[2]").appName("ulr-tests")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
         .getOrCreate())
    yield s
    s.stop()
