"""checks/verify/scale_in: the fast scale-in's check and verdict, on AWS-shaped data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ecs_gpu.checks.verify import scale_in as vsi
from ecs_gpu.checks.verify import step_paths as vsp
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import fast_scale_in as fsi
from ecs_gpu.spec import load_spec
from example_specs import G5_PATH as EXAMPLE_SPEC

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _fast_in() -> fsi.FastScaleIn:
    spec = load_spec(EXAMPLE_SPEC)
    on = spec.model_copy(
        update={"scaling": spec.scaling.model_copy(update={"fast_scale_in": True})}
    )
    f = fsi.fast_scale_in(on)
    assert f is not None
    return f


def test_the_count_an_activity_set() -> None:
    # The user guide's example activity says it in the Description; a Cause may too.
    assert vsi.count_set({"Description": "Setting desired count to 1."}) == 1
    assert vsi.count_set({"Cause": "... changing the desired capacity from 4 to 3."}) == 3
    assert vsi.count_set({"Description": "", "Cause": "monitor alarm a triggered policy p"}) is None


def test_the_verdict_on_the_first_scale_in() -> None:
    f = _fast_in()

    def d(policy: str | None, before: int, after: int | None) -> vsi.ScaleIn:
        return vsi.ScaleIn(
            T0 + timedelta(seconds=130), "c", "", "Successful", before, after, policy
        )

    v = vsi.judge_scale_in(d("in", 2, 1), f, since=T0, low=0.0)
    assert (v.by, v.after_s, v.allowed) == ("fast_scale_in", 130.0, 1)
    assert vsi.judge_scale_in(d("in", 4, 1), f, since=T0, low=0.0).by == "too_many"
    # 8 tasks at 0: the deepest band, 25 %: two tasks.
    assert vsi.judge_scale_in(d("in", 8, 6), f, since=T0, low=0.0).by == "fast_scale_in"
    assert vsi.judge_scale_in(d("in", 8, 5), f, since=T0, low=0.0).by == "too_many"
    # A count the activity did not say is judged by the policy alone.
    assert vsi.judge_scale_in(d("in", 4, None), f, since=T0, low=0.0).by == "fast_scale_in"
    assert vsi.judge_scale_in(d(None, 2, 1), f, since=T0, low=0.0, missing="x").by == "lacking"
    v = vsi.judge_scale_in(d(None, 2, 1), f, since=T0, low=0.0)
    assert v.by == "not_fast"
    assert vsi.scale_in_problem(v, f, resource_id="service/c/s") is not None
    ok = vsi.judge_scale_in(d("in", 2, 1), f, since=T0, low=0.0)
    assert vsi.scale_in_problem(ok, f, resource_id="service/c/s") is None


def test_the_fast_paths_check_leaves_the_fast_scale_ins_policy_alone() -> None:
    f = _fast_in()
    removes = vsp.StepPolicy("in", ("in-alarm",), shape="fast_scale_in")
    # Only the fast scale-in deployed: the fast path is missing, said as such (its
    # policy is not taken for the fast path's with an alarm that does not match).
    fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
    assert fast is not None
    said = vsp.explain_missing_fast_path(
        [removes], [], fast, resource_id="r", cluster="c", service="s"
    )
    assert said is not None and said.endswith("but r has no StepScaling policy")
    missing = vsi.explain_missing_fast_scale_in(
        [vsp.StepPolicy("out", ("out-alarm",))], [], f, resource_id="r", cluster="c", service="s"
    )
    assert missing is not None and missing.endswith("has no StepScaling policy that removes tasks")
