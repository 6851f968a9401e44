"""What the built image holds, and what it must not: the build's extra CA certificates (unless asked for),
compilers, headers, caches, docs, the Python packages the appliance never loads; and its size."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from testbed.container import VENV, build, docker

pytestmark = [pytest.mark.image, pytest.mark.timeout(1200)]

CA_SOURCE = Path(os.environ.get("DESKPILOT_BUILD_CA", "/usr/local/share/ca-certificates"))


def build_certificates() -> list[str]:
    """The base64 bodies of the CA certificates scripts/build-image.sh hands the build (same source)."""
    if os.environ.get("DESKPILOT_BUILD_CA") == "none" or not CA_SOURCE.exists():
        return []
    files = sorted(CA_SOURCE.rglob("*.crt")) if CA_SOURCE.is_dir() else [CA_SOURCE]
    pem = "".join(f.read_text() for f in files)
    return re.findall(r"-----BEGIN CERTIFICATE-----\s*(.+?)\s*-----END CERTIFICATE-----", pem, re.S)


def needles() -> list[bytes]:
    """One line from the middle of each certificate: unique to it, and found in any file that holds it."""
    bodies = build_certificates()
    if not bodies:
        pytest.skip("the build was given no extra CA certificates")
    return [body.split()[len(body.split()) // 2].encode() for body in bodies]


def in_image(image: str, wanted: list[bytes]) -> set[bytes]:
    """Which of `wanted` occur anywhere in the image: every layer, files later layers delete included."""
    found: set[bytes] = set()
    tail = b""
    with subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE) as save:
        assert save.stdout
        while chunk := save.stdout.read(1 << 22):
            window = tail + chunk
            found.update(n for n in wanted if n in window)
            tail = window[-256:]
    assert save.returncode == 0
    return found


def sh(image: str, script: str) -> str:
    return docker("run", "--rm", "--network", "none", "--entrypoint", "sh", image, "-c", script)


def test_the_build_ca_certificates_are_in_no_layer_of_the_image(image: str) -> None:
    wanted = needles()
    assert not in_image(image, wanted), "a layer of the image holds a CA certificate of the build"


def test_keep_build_ca_adds_them_to_the_image_system_store(image: str, monkeypatch) -> None:
    wanted = needles()
    kept = f"{image}-keep-ca"
    monkeypatch.setenv("DESKPILOT_KEEP_BUILD_CA", "1")
    build(kept)  # the last layer differs, everything else comes from the cache
    try:
        bundle = sh(kept, "cat /etc/ssl/certs/ca-certificates.crt")
        assert all(n.decode() in bundle for n in wanted)
    finally:
        docker("rmi", kept, check=False)


def test_no_compiler_headers_caches_or_docs(image: str) -> None:
    compilers = "command -v cc gcc cpp c++ || true"
    wanted = " -o ".join(
        [
            "-name 'cc1*'",
            "-name '*.h'",
            "-path /root/.cache",
            "-path '*/site-packages/pip'",
            "-path '*/site-packages/setuptools'",
            "-path '*/site-packages/*/tests'",
        ]
    )
    files = f"find / -xdev \\( {wanted} \\) -print 2>/dev/null | head -20"
    docs = "find /usr/share/doc -type f -not -name copyright; find /usr/share/man /usr/share/info -type f"
    found = sh(image, f"{compilers}; {files}; {docs}")
    assert not found.split(), found


def test_the_image_stays_within_its_size(image: str) -> None:
    size = int(docker("image", "inspect", "--format", "{{.Size}}", image))
    assert size <= 1.4e9, f"the image is {size / 1e9:.3f} GB, over its 1.4 GB target (bench/image.py: layers)"


def test_the_venv_holds_no_aws_sdk_stubs_or_debug_information(image: str) -> None:
    site = f"{VENV}/lib/python3.11/site-packages"
    unused = f"ls -d {site}/boto3 {site}/botocore {site}/s3transfer {site}/hf_xet 2>/dev/null"
    sources = f"find {site} \\( -name '*.pyi' -o -name '*.pyx' -o -name '*.c' \\) | head -5"
    # the section name is in every file that still has its debug information
    debug = f"grep -l -F .debug_info {site}/uvloop/*.so {site}/asyncpg/protocol/*.so"
    found = sh(image, f"{unused}; {sources}; {debug} || true")
    assert not found.split(), found
