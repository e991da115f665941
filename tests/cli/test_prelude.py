"""What diff and deploy do before their change set (cli/prelude.py): --json checked before any
AWS call and written the same way, and the staged template removed however the block ends."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from botocore.stub import Stubber
from rich.console import Console

from ecs_gpu.aws import staging
from ecs_gpu.cli import prelude, render
from ecs_gpu.errors import BadInputError
from support.stubbed import offline_client

TEMPLATE = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
BUCKET = staging.TemplateBucket("team-cfn-templates", owner="123456789012")


def test_json_to_stdout_sends_the_human_output_to_stderr_for_the_block_only(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "s.toml"
    before = render.console.stderr
    with prelude.json_first(spec, Path("-")):
        assert render.console.stderr is True
    assert render.console.stderr is before
    with pytest.raises(RuntimeError), prelude.json_first(spec, Path("-")):
        raise RuntimeError("the command failed")
    assert render.console.stderr is before
    with prelude.json_first(spec, tmp_path / "out.json"):
        assert render.console.stderr is False


def test_json_over_the_spec_is_refused_before_the_block_runs(tmp_path: Path) -> None:
    spec = tmp_path / "s.json"
    spec.write_text("{}", encoding="utf-8")
    ran = []
    with pytest.raises(BadInputError, match="--json"), prelude.json_first(spec, spec):
        ran.append(True)
    assert ran == []


def test_json_to_a_file_is_written_whole_and_its_path_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=shown, width=200))
    monkeypatch.setattr(prelude, "console", render.console)
    out = tmp_path / "plan.json"
    prelude.write_json(out, {"changes": [], "when": tmp_path}, "Plan")
    assert (
        out.read_text(encoding="utf-8")
        == json.dumps({"changes": [], "when": str(tmp_path)}, indent=2) + "\n"
    )
    assert shown.getvalue().strip() == f"Plan: {out}"


def test_json_to_stdout_is_the_document_alone(capsys: pytest.CaptureFixture[str]) -> None:
    prelude.write_json(Path("-"), {"status": "ok"}, "Plan")
    assert json.loads(capsys.readouterr().out) == {"status": "ok"}


def test_an_inline_template_needs_no_bucket() -> None:
    cfn = offline_client("cloudformation")
    with prelude.staged(cfn, TEMPLATE, "svc", None, None) as source:
        assert source.change_set_args("us-east-1") == {"TemplateBody": staging.minified(TEMPLATE)}
        assert not source.staged


def test_a_staged_template_is_deleted_after_the_block_and_a_failed_delete_is_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said = io.StringIO()
    monkeypatch.setattr(prelude, "err_console", Console(file=said, width=300))
    cfn, s3 = offline_client("cloudformation"), offline_client("s3")
    key = staging.template_key(BUCKET.prefix, "svc", staging.minified(TEMPLATE))
    owner = {"ExpectedBucketOwner": "123456789012"}
    where = {"Bucket": BUCKET.name, **owner}
    with Stubber(s3) as stub:
        stub.add_response("head_bucket", {"BucketRegion": "us-east-1"}, where)
        stub.add_response("put_object", {}, None)
        stub.add_client_error("delete_object", "AccessDenied", http_status_code=403)
        with pytest.raises(RuntimeError), prelude.staged(cfn, TEMPLATE, "svc", BUCKET, s3) as src:
            assert src.staged and src.key == key
            raise RuntimeError("the change set failed")
        stub.assert_no_pending_responses()
    text = " ".join(said.getvalue().split())
    assert text.startswith("warning: could not delete the staged template")
    assert f"s3://{BUCKET.name}/{key} (AccessDenied)" in text
