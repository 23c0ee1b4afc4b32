"""The storage options every workspace command takes: endpoint, profile, region, any option."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from ctxfs import Workspace
from ctxfs._cli._common import CliError, add_storage_arguments, storage_options
from ctxfs._cli._main import main
from tests.conftest import BUCKET, s3_options


def _options(url: str, *words: str) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser()
    add_storage_arguments(parser)
    return storage_options(parser.parse_args(list(words)), url)


def test_nothing_asked_is_no_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CTXFS_S3_ENDPOINT_URL", raising=False)
    assert _options("s3://b/p") is None
    assert _options("./ws") is None


def test_each_option_lands_where_s3fs_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXFS_S3_ENDPOINT_URL", "http://from-env")
    words = ["--profile", "dev", "--region", "eu-west-1", "--storage-option", "anon=false"]
    words += ["--storage-option", "client_kwargs.verify=false", "--storage-option", "n=3"]
    words += ["--storage-option", "tag=v1.2"]
    assert _options("s3://b/p", *words) == {
        "anon": False,
        "client_kwargs": {"verify": False, "region_name": "eu-west-1"},
        "n": 3,
        "tag": "v1.2",  # not JSON: kept as text
        "profile": "dev",
        "endpoint_url": "http://from-env",
    }
    assert _options("s3://b/p", "--endpoint-url", "http://flag") == {"endpoint_url": "http://flag"}


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--storage-option", "anon"], "write KEY=VALUE"),
        (["--storage-option", "=1"], "write KEY=VALUE"),
        (["--storage-option", "a=1", "--storage-option", "a.b=2"], "a is already set"),
        (["--storage-option", "a.b=1", "--storage-option", "a=2"], "a already holds a.b"),
        (["--storage-option", "a..b=1"], "empty part"),
        (["--storage-option", ".a=1"], "empty part"),
        (["--profile", "dev"], "apply to an s3:// workspace only"),
    ],
)
def test_bad_options_are_refused_clearly(words: list[str], message: str) -> None:
    with pytest.raises(CliError, match=message):
        _options("memory://x", *words)


def test_region_beside_a_client_kwargs_value_is_refused_clearly() -> None:
    words = ["--storage-option", "client_kwargs=verify", "--region", "eu-west-1"]
    with pytest.raises(CliError, match="client_kwargs is already set"):
        _options("s3://b/p", *words)


@pytest.mark.parametrize("name", ["key", "secret", "token", "username", "password", "profile"])
def test_credentials_stay_text_whatever_they_look_like(name: str) -> None:
    # a numeric secret read as JSON would reach botocore as a number
    for value in ("12345678", "true", "null", "1e5", '"quoted"'):
        options = _options("s3://b/p", "--storage-option", f"{name}={value}")
        assert options == {name: value}
    nested = _options("s3://b/p", "--storage-option", f"config_kwargs.{name}=0123")
    assert nested == {"config_kwargs": {name: "0123"}}


def test_s3_options_reach_the_store(
    s3_endpoint: str,
    s3_bucket: str,
    aio_session: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"s3://{BUCKET}/opts"
    Workspace(url, storage_options=s3_options(s3_endpoint, aio_session)).write_text("/a.md", "x\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    words = ["--endpoint-url", s3_endpoint, "--region", "us-east-1"]
    words += ["--storage-option", "key=testing", "--storage-option", "secret=testing"]
    assert main(["cat", url, "/a.md", *words]) == 0
    assert capsys.readouterr().out == "x\n"
    # without the credentials the options carried, the store refuses: they were what it used
    assert main(["cat", url, "/a.md", "--endpoint-url", s3_endpoint]) != 0


@pytest.mark.parametrize("command", ["ls", "grep", "threads", "memory"])
@pytest.mark.parametrize("url", ["nopkg://b/x", "reference://x/y", "dir://x/y"])
def test_storage_that_cannot_be_opened_is_one_line_exit_2(
    command: str,
    url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a protocol whose package is missing (gs:// without gcsfs) or whose filesystem needs
    # more than a URL: exit 70, 'internal error (ImportError: ...)' before
    from fsspec.registry import known_implementations

    monkeypatch.setitem(
        known_implementations,
        "nopkg",
        {"class": "ctxfs_no_such_module.FS", "err": "Install nopkgfs to access NoPkg"},
    )
    words = {"grep": ["grep", url, "x"], "memory": ["memory", "show", url]}
    assert main(words.get(command, [command, url])) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ctxfs {command}: cannot open the workspace {url}: ")
    assert err.count("\n") == 1
    if url.startswith("nopkg"):
        assert "Install nopkgfs to access NoPkg" in err
