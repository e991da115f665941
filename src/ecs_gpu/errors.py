"""The error hierarchy and the exit codes it maps to.

Every error a user can cause carries its exit code, the way cfn-lint's
``CfnLintExitException`` does, so the CLI never guesses and never prints a
traceback. Exit codes are public interface (README.md, "Exit codes"):

0 ok, 1 problems found (a failed operation included), 2 bad input, 3 AWS
unreachable or access denied; 130 interrupted (Ctrl-C) and 141 standard
output closed early (a broken pipe), 128 + the signal number as a shell
reports a process that signal ended.
"""

from __future__ import annotations

__all__ = [
    "EXIT_AWS",
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PROBLEMS",
    "AwsError",
    "AwsRefused",
    "BadInputError",
    "EcsGpuError",
    "ProblemsFound",
    "SpecError",
    "StackInterrupted",
]

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_BAD_INPUT = 2
EXIT_AWS = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


class EcsGpuError(Exception):
    """Root of every error ecs-gpu raises on purpose."""

    exit_code = EXIT_PROBLEMS

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class BadInputError(EcsGpuError):
    """Input the user gave us is wrong: a file, a key, a value, a flag."""

    exit_code = EXIT_BAD_INPUT


class SpecError(BadInputError):
    """A spec file is unreadable or breaks a rule.

    ``problems`` holds one line per problem, each naming file, key and value
    and saying how to fix it.
    """

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"{path}: {len(problems)} {noun} in the spec:\n{lines}")


class AwsError(EcsGpuError):
    """AWS could not be reached, or denied a call. Names the call and permission."""

    exit_code = EXIT_AWS


class ProblemsFound(EcsGpuError):
    """A check ran and found problems (validate findings, doctor errors, verify failures)."""

    exit_code = EXIT_PROBLEMS


class StackInterrupted(EcsGpuError):
    """Ctrl-C while following a stack: CloudFormation carries on without us."""

    exit_code = EXIT_INTERRUPTED


class AwsRefused(ProblemsFound):
    """AWS answered and refused a call for what it asked: the operation failed (exit 1).

    A CloudFormation ValidationError (a stack that vanished, an operation the
    stack's state does not allow), a resource that is gone: AWS was reached
    and did not deny the caller, so exit 3 would send them to check the
    network and their permissions for nothing.
    """
