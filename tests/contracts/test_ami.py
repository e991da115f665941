"""The AMI a deploy passes (ecs_gpu.contracts.ami.choose): every case, without AWS."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.contracts import ami
from ecs_gpu.errors import BadInputError, ProblemsFound

RUNNING = "ami-0aaaaaaaaaaaaaaa1"
PUBLISHED = "ami-0bbbbbbbbbbbbbbb2"
PINNED = "ami-0ccccccccccccccc3"


def choose(
    *,
    spec_ami: str | None = None,
    current: str | None = RUNNING,
    recommended: str | None = PUBLISHED,
    update_ami: bool = False,
    exists: bool = True,
) -> ami.Decision:
    return ami.choose(
        spec_ami=spec_ami,
        current=current,
        recommended=recommended,
        update_ami=update_ami,
        exists=exists,
    )


def test_a_new_stack_gets_the_recommended_ami() -> None:
    d = choose(current=None, exists=False)
    assert d == ami.Decision(PUBLISHED, "new-stack")
    assert not d.changes


def test_a_new_stack_without_a_recommended_ami_says_to_pin_one() -> None:
    with pytest.raises(ProblemsFound, match=r"pin one with \[capacity\] ami_id"):
        choose(current=None, recommended=None, exists=False)


def test_an_existing_stack_keeps_its_ami_and_names_the_newer_one() -> None:
    d = choose()
    assert d == ami.Decision(RUNNING, "kept", newer=PUBLISHED)
    assert not d.changes


def test_an_existing_stack_on_the_recommended_ami_has_no_note() -> None:
    assert choose(current=PUBLISHED) == ami.Decision(PUBLISHED, "kept")


def test_an_existing_stack_keeps_its_ami_when_the_recommended_one_is_unknown() -> None:
    assert choose(recommended=None) == ami.Decision(RUNNING, "kept")


def test_update_ami_moves_to_the_recommended_ami() -> None:
    d = choose(update_ami=True)
    assert d == ami.Decision(PUBLISHED, "update-ami")
    assert d.changes


def test_update_ami_on_the_recommended_ami_changes_nothing() -> None:
    d = choose(current=PUBLISHED, update_ami=True)
    assert d == ami.Decision(PUBLISHED, "kept") and not d.changes


def test_update_ami_moves_a_stack_whose_ami_could_not_be_read() -> None:
    assert choose(current=None, update_ami=True) == ami.Decision(PUBLISHED, "update-ami")


def test_update_ami_without_a_recommended_ami_is_a_problem() -> None:
    with pytest.raises(ProblemsFound, match="--update-ami"):
        choose(recommended=None, update_ami=True)


def test_an_unreadable_ami_is_never_replaced_without_asking() -> None:
    with pytest.raises(ProblemsFound, match="--update-ami") as e:
        choose(current=None)
    assert ami.PARAMETER in str(e.value) and "[capacity] ami_id" in str(e.value)


def test_a_pin_creates_a_new_stack_on_it() -> None:
    d = choose(spec_ami=PINNED, current=None, exists=False)
    assert d == ami.Decision(PINNED, "new-stack", newer=PUBLISHED, pinned=True)


def test_a_pin_needs_no_recommended_ami() -> None:
    d = choose(spec_ami=PINNED, current=None, recommended=None, exists=False)
    assert d == ami.Decision(PINNED, "new-stack", pinned=True)


def test_an_unchanged_pin_keeps_the_ami() -> None:
    d = choose(spec_ami=RUNNING)
    assert d == ami.Decision(RUNNING, "kept", newer=PUBLISHED, pinned=True)
    assert not d.changes


def test_a_changed_pin_moves_the_fleet() -> None:
    d = choose(spec_ami=PINNED)
    assert d == ami.Decision(PINNED, "spec", newer=PUBLISHED, pinned=True)
    assert d.changes


def test_a_pin_on_the_recommended_ami_has_no_note() -> None:
    assert choose(spec_ami=PUBLISHED).newer is None


def test_update_ami_with_a_pin_is_refused_naming_both() -> None:
    with pytest.raises(BadInputError, match="--update-ami") as e:
        choose(spec_ami=PINNED, update_ami=True)
    assert f"[capacity] ami_id = {PINNED!r}" in str(e.value) and "Fix:" in str(e.value)


def test_current_ami_from_this_ecs_gpus_parameter() -> None:
    params = [{"ParameterKey": ami.PARAMETER, "ParameterValue": RUNNING}]
    assert ami.current_from_parameters(params) == RUNNING


def test_current_ami_of_an_older_stack_is_the_ssm_parameters_resolved_value() -> None:
    # What DescribeStacks answers for an AWS::SSM::Parameter::Value<...>
    # parameter: the path as ParameterValue, the AMI as ResolvedValue.
    params = [
        {
            "ParameterKey": ami.LEGACY_PARAMETER,
            "ParameterValue": ami.RECOMMENDED_SSM_PARAMETER,
            "ResolvedValue": RUNNING,
        }
    ]
    assert ami.current_from_parameters(params) == RUNNING


@pytest.mark.parametrize(
    "params",
    [
        [],
        [{"ParameterKey": "Other", "ParameterValue": RUNNING}],
        # moto leaves ResolvedValue out; the path itself is no AMI.
        [{"ParameterKey": ami.LEGACY_PARAMETER, "ParameterValue": ami.RECOMMENDED_SSM_PARAMETER}],
        [{"ParameterKey": ami.PARAMETER, "ParameterValue": "****"}],
    ],
)
def test_no_readable_ami(params: list[dict[str, str]]) -> None:
    assert ami.current_from_parameters(params) is None


# --- what diff and deploy print (cli/ami.py) ------------------------------------------


def _choice(d: ami.Decision, created: dict[str, str] | None = None) -> Any:
    from ecs_gpu.aws.ami import AmiChoice, Image

    dates = created or {}

    def img(i: str) -> Image:
        return Image(i, f"name-of-{i}", dates.get(i))

    return AmiChoice(d, img(d.image_id), img(RUNNING), img(PUBLISHED))


def test_a_changed_pin_says_the_fleet_rolls_and_names_the_published_ami() -> None:
    from ecs_gpu.cli.ami import lines

    first, note = lines(_choice(choose(spec_ami=PINNED)))
    assert first.startswith(f"AMI: {RUNNING} (name-of-{RUNNING}) -> {PINNED} (name-of-{PINNED})")
    assert "([capacity] ami_id): the instance refresh replaces every GPU instance" in first
    assert f"published: {PUBLISHED} (name-of-{PUBLISHED}); the stack moves to {PINNED}" in note
    assert "Change [capacity] ami_id to it" in note and "--update-ami" not in note


def test_a_kept_pin_says_so_and_an_older_published_ami_is_not_called_newer() -> None:
    from ecs_gpu.cli.ami import lines

    dates = {RUNNING: "2026-11-13T00:00:00.000Z", PUBLISHED: "2026-10-01T00:00:00.000Z"}
    first, note = lines(_choice(choose(spec_ami=RUNNING), dates))
    assert first == (
        f"AMI: {RUNNING} (name-of-{RUNNING}, 2026-11-13T00:00:00.000Z), the one the stack "
        "runs, pinned by [capacity] ami_id."
    )
    assert note.startswith("Note: a different recommended ECS GPU AMI is published")


def test_an_unchanged_stack_on_the_recommended_ami_prints_one_line() -> None:
    from ecs_gpu.cli.ami import lines

    assert lines(_choice(choose(current=PUBLISHED))) == [
        f"AMI: {PUBLISHED} (name-of-{PUBLISHED}), the one the stack runs (kept)."
    ]
