"""Where CreateChangeSet reads the template: inline, or staged in the user's bucket.

No S3 bucket is created behind the user's back: a template over the
TemplateBody limit is refused with the way out, unless the user names a
bucket (``--template-bucket``); then the template is staged there as one
object, passed as TemplateURL, and deleted once the change set has been
executed or deleted (:class:`TemplateSource`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from botocore import exceptions as bx

from ecs_gpu.aws.errors import AccessDenied, error_code, is_access_denied, translate
from ecs_gpu.errors import BadInputError
from ecs_gpu.template.limits import minified, template_size_problem

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

DEFAULT_TEMPLATE_PREFIX: Final = "ecs-gpu/"


def template_body(template: Mapping[str, Any]) -> str:
    """The template as minified JSON, refused if over CloudFormation's body limit."""
    body = minified(template)
    problem = template_size_problem(body)
    if problem is not None:
        raise BadInputError(problem)
    return body


@dataclass(frozen=True)
class TemplateBucket:
    """A bucket the user named (``--template-bucket``) and the key prefix to stage under.

    ``owner``: the account that must own the bucket (S3's ExpectedBucketOwner,
    the caller's own account from the CLI), so a mistyped name never puts the
    template, with its secret ARNs and network layout, in a stranger's bucket.
    """

    name: str
    prefix: str = DEFAULT_TEMPLATE_PREFIX
    owner: str | None = None

    def owner_args(self) -> dict[str, Any]:
        return {"ExpectedBucketOwner": self.owner} if self.owner else {}


# S3 answers these for a bucket in another Region when the request names this one.
_WRONG_REGION_CODES = frozenset(
    {"PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"}
)
_DNS_SUFFIX = {"aws-cn": "amazonaws.com.cn"}


def template_key(prefix: str, stack: str, body: str) -> str:
    """The object key: prefix, stack and content hash, so no two templates share one."""
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
    return f"{prefix}{stack}-{digest}.json"


def template_url(bucket: str, key: str, region: str, partition: str = "aws") -> str:
    """The regional https URL CloudFormation reads TemplateURL from.

    Virtual-hosted (``https://BUCKET.s3.REGION.amazonaws.com/KEY``), the form S3
    documents; path-style for a bucket name with dots, which would not match
    S3's TLS certificate as a host name.
    """
    host = f"s3.{region}.{_DNS_SUFFIX.get(partition, 'amazonaws.com')}"
    if "." in bucket:
        return f"https://{host}/{bucket}/{key}"
    return f"https://{bucket}.{host}/{key}"


def _bucket_missing(bucket: str) -> BadInputError:
    return BadInputError(
        f"--template-bucket {bucket}: no such bucket (S3 NoSuchBucket). ecs-gpu does not "
        "create buckets. Fix: check the name, or create one in the stack's Region "
        f"(`aws s3 mb s3://{bucket}`) and rerun."
    )


def _bucket_elsewhere(bucket: str, bucket_region: str, region: str) -> BadInputError:
    return BadInputError(
        f"--template-bucket {bucket} is in {bucket_region}, the stack in {region}. ecs-gpu "
        f"stages the template under the stack's Region's S3 URL, and S3 answers a bucket in "
        'another Region with a redirect that CloudFormation does not follow ("must be '
        'addressed using the specified endpoint"). Fix: name a bucket in '
        f"{region} (e.g. `aws s3 mb s3://NAME --region {region}`), or deploy to "
        f"{bucket_region} with --region {bucket_region}."
    )


class TemplateSource:
    """The template as CreateChangeSet takes it: inline, or staged in the user's bucket.

    The size limit is checked here, before any call. With a bucket the
    object is uploaded by :meth:`stage` (the CLI calls it first, so a bad
    bucket fails before the question) or else by the first change set that
    needs it, and :meth:`remove` deletes it; the caller runs that once the
    change set has been executed or deleted.
    """

    def __init__(
        self,
        template: Mapping[str, Any],
        stack: str,
        *,
        bucket: TemplateBucket | None = None,
        s3: S3Client | None = None,
    ) -> None:
        self.body = minified(template)
        problem = template_size_problem(self.body, bucket=bucket is not None)
        if problem is not None:
            raise BadInputError(problem)
        if bucket is not None and s3 is None:
            raise ValueError("a TemplateBucket needs an S3 client")
        self.stack = stack
        self.bucket = bucket
        self.s3 = s3
        self.key = template_key(bucket.prefix, stack, self.body) if bucket else None
        self.staged = False

    def stage(self, region: str) -> None:
        """Upload now (no-op inline or once done), so a bad bucket fails before any question."""
        if self.bucket is None or self.s3 is None or self.key is None or self.staged:
            return
        self._upload(self.bucket.name, self.key, region)
        self.staged = True

    def change_set_args(self, region: str) -> dict[str, str]:
        """TemplateBody, or TemplateURL once the template is in the bucket."""
        if self.bucket is None or self.s3 is None or self.key is None:
            return {"TemplateBody": self.body}
        self.stage(region)
        return {"TemplateURL": template_url(self.bucket.name, self.key, region, _partition(region))}

    def _upload(self, bucket: str, key: str, region: str) -> None:
        assert self.s3 is not None
        assert self.bucket is not None
        owner = self.bucket.owner_args()
        where = bucket_region(self.s3, bucket, owner)
        if where is not None and where != region:
            raise _bucket_elsewhere(bucket, where, region)
        try:
            # No ACL (the object stays private to the bucket's owner) and no
            # encryption settings: the bucket's default encryption applies.
            self.s3.put_object(
                Bucket=bucket,
                Key=key,
                Body=self.body.encode("utf-8"),
                ContentType="application/json",
                **owner,
            )
        except bx.ClientError as e:
            code = error_code(e)
            if code == "NoSuchBucket":
                raise _bucket_missing(bucket) from None
            if code in _WRONG_REGION_CODES:
                raise _bucket_elsewhere(bucket, "another Region", region) from None
            if is_access_denied(e):
                also = (
                    f", or the bucket is not owned by your account {self.bucket.owner} "
                    "(ecs-gpu writes only to a bucket your account owns)"
                    if self.bucket.owner
                    else ""
                )
                raise AccessDenied(
                    "s3",
                    "PutObject",
                    f"{code}: {e.response.get('Error', {}).get('Message', '')} (on "
                    f"arn:aws:s3:::{bucket}/{key}, for --template-bucket {bucket}{also}). "
                    "Nothing was deployed",
                ) from None
            raise translate(e, "s3", "PutObject") from None
        except bx.BotoCoreError as e:
            raise translate(e, "s3", "PutObject") from None

    def remove(self) -> str | None:
        """Delete the staged object; a sentence for the user if that failed, else None."""
        if not self.staged or self.bucket is None or self.s3 is None or self.key is None:
            return None
        try:
            self.s3.delete_object(Bucket=self.bucket.name, Key=self.key, **self.bucket.owner_args())
        except (bx.ClientError, bx.BotoCoreError) as e:
            why = error_code(e) or type(e).__name__
            return (
                f"could not delete the staged template s3://{self.bucket.name}/{self.key} "
                f"({why}); the deployment is unaffected. Fix: grant s3:DeleteObject on it, "
                f"or delete it by hand: `aws s3 rm s3://{self.bucket.name}/{self.key}`."
            )
        self.staged = False
        return None


def _partition(region: str) -> str:
    return "aws-cn" if region.startswith("cn-") else "aws"


def bucket_region(s3: S3Client, bucket: str, owner: Mapping[str, str] | None = None) -> str | None:
    """The bucket's Region from HeadBucket's x-amz-bucket-region, or None if S3 did not say.

    S3 sends that header on a 403 too, so a caller without s3:ListBucket still
    learns the Region; NoSuchBucket (404) is refused here, before any upload.
    """
    try:
        resp = s3.head_bucket(Bucket=bucket, **(owner or {}))
        if resp.get("BucketRegion"):
            return resp["BucketRegion"]
        headers: Mapping[str, str] = resp.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    except bx.ClientError as e:
        status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if status == 404 or error_code(e) in ("404", "NoSuchBucket"):
            raise _bucket_missing(bucket) from None
        if not (is_access_denied(e) or status in (301, 400, 403)):
            raise translate(e, "s3", "HeadBucket") from None
        headers = e.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    except bx.BotoCoreError as e:
        raise translate(e, "s3", "HeadBucket") from None
    return headers.get("x-amz-bucket-region")
