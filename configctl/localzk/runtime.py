"""What it takes to run a ZooKeeper server here: a Java, and ZooKeeper's jars.

Asking users to install ZooKeeper is a hurdle, but pyspark (a dependency anyway) ships the server's
jars, so we run them with the machine's Java 17+. Debian's ``zookeeper`` package is the fallback.
Nothing here starts anything: it only finds, so a missing piece is a one-line error before a
process is launched.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from configctl.errors import EnvironmentProblem

# The jars ZooKeeper's server needs, picked out of pyspark/jars (~280 jars, mostly Spark's own).
# netty-* brings netty-handler's JDK TLS support, which the secured server (NettyServerCnxnFactory) uses.
_PYSPARK_JAR_PREFIXES = (
    "zookeeper-",
    "slf4j-api-",
    "log4j-api-",
    "log4j-core-",
    "log4j-slf4j2-impl-",
    "audience-annotations-",
    "commons-io-",
    "commons-cli-",
    "metrics-core-",
    "snappy-java-",
    "netty-",
)
_PYSPARK_REQUIRED = ("zookeeper-3", "zookeeper-jute-", "slf4j-api-", "log4j-slf4j2-impl-", "netty-handler-")
_DEBIAN_JAR_DIRS = (Path("/usr/share/zookeeper"), Path("/usr/share/zookeeper/lib"), Path("/usr/share/java"))


def find_java() -> str:
    """``$JAVA_HOME/bin/java`` if that exists, else ``java`` on PATH.

    ``JAVA_HOME`` is read here, not in :mod:`configctl.settings`: it is the machine's Java, found
    the way every Java launcher finds it (as ``java`` on ``PATH`` is), not a configctl setting;
    this is the one place it is read (the local ZooKeeper and the local Kafka both ask here).
    """
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java")
    if found:
        return found
    raise EnvironmentProblem("java not found: install Java 17+ or set JAVA_HOME")


def find_zookeeper_classpath() -> tuple[list[str], dict[str, Path]]:
    """The jars to run a ZooKeeper server, and which logging backends they use.

    pyspark's ``jars/`` is located without importing pyspark (which takes seconds). Only the
    jars ZooKeeper needs are put on the classpath; if their names ever change, the whole
    directory is used instead. Debian's ``zookeeper`` package is the fallback.
    """
    spec = importlib.util.find_spec("pyspark")
    for location in (spec.submodule_search_locations or []) if spec else []:
        jars_dir = Path(location) / "jars"
        if not jars_dir.is_dir():
            continue
        jars = sorted(p for p in jars_dir.glob("*.jar") if p.name.startswith(_PYSPARK_JAR_PREFIXES))
        if not any(jar.name.startswith("zookeeper-3") for jar in jars):
            continue
        names = [jar.name for jar in jars]
        if all(any(name.startswith(req) for name in names) for req in _PYSPARK_REQUIRED):
            return [str(jar) for jar in jars], {"log4j2": Path("log4j2.properties")}
        return [str(jars_dir / "*")], {"log4j2": Path("log4j2.properties")}
    for directory in _DEBIAN_JAR_DIRS:
        if any(directory.glob("zookeeper*.jar")):
            classpath = [str(d / "*") for d in _DEBIAN_JAR_DIRS if d.is_dir()]
            return classpath, {
                "log4j2": Path("log4j2.properties"),
                "log4j": Path("log4j.properties"),
                "logback": Path("logback.xml"),
            }
    raise EnvironmentProblem(
        "ZooKeeper jars not found: install pyspark (pip install pyspark) or the Debian zookeeper package"
    )
