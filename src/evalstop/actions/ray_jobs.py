"""``evalstop action ray``: stop one Ray job by its submission id, the tenant's only.

    evalstop watch ... --action 'evalstop action ray --tenant {tenant} --job-id {job_id}
        --best-step {best_step}'

The id is the job's submission id (pass it to the job as ``EVALSTOP_JOB_ID``, e.g.
``ray job submit --submission-id ID --runtime-env-json '{"env_vars":
{"EVALSTOP_JOB_ID": "ID"}}' --metadata-json '{"tenant": "alice"}'``). Ray Jobs has no
accounts: the owner is the job's ``tenant`` metadata, set at submission, which must equal
``--tenant`` exactly (a job without it is nobody's, never stopped). The action speaks the
Ray Jobs REST API of the dashboard (``--address``, default ``$RAY_ADDRESS`` or
http://127.0.0.1:8265): ``GET /api/jobs/ID``, then ``POST /api/jobs/ID/stop`` for a job
PENDING or RUNNING; a job STOPPED, SUCCEEDED or FAILED is exit 10 (already ended). Standard
library only: no ``ray[default]`` needed where the controller runs.

A dashboard with token authentication (``ray start``'s default in Ray 2.60) gets the
token the way Ray's own clients find it: ``$RAY_AUTH_TOKEN``, else the first line of the
file ``$RAY_AUTH_TOKEN_PATH`` names, else ``~/.ray/auth_token``, sent as ``Authorization:
Bearer TOKEN`` (none with ``RAY_AUTH_MODE=disabled``). A dashboard that refuses it (HTTP
401 or 403) is exit 1 with one line saying which.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from evalstop.actions import (
    ALREADY_ENDED,
    DRY_RUN,
    REFUSED,
    TOOL_TIMEOUT,
    USAGE,
    Outcome,
    add_common,
    description,
    finish,
    same_owner,
)

ACTIVE = ("PENDING", "RUNNING")
TOKEN_MAX = 4096  # Ray's tokens are 64 hex digits; a file's whole text is not a token


def add_parser(sub):
    p = sub.add_parser("ray", help="stop a Ray job by submission id, only the tenant's",
                       description=description(__doc__))
    add_common(p)
    p.add_argument("--address", default=os.environ.get("RAY_ADDRESS", "http://127.0.0.1:8265"),
                   help="the Ray dashboard (default: $RAY_ADDRESS, else "
                        "http://127.0.0.1:8265)")
    return p


def _token() -> tuple[str, str] | None:
    """(token, where it came from), in the order Ray's AuthenticationTokenLoader reads them,
    or None: no token anywhere, or auth turned off here."""
    if os.environ.get("RAY_AUTH_MODE", "").strip().lower() == "disabled":
        return None
    token, where = os.environ.get("RAY_AUTH_TOKEN", "").strip(), "$RAY_AUTH_TOKEN"
    if not token:
        named = os.environ.get("RAY_AUTH_TOKEN_PATH", "")
        where = f"$RAY_AUTH_TOKEN_PATH ({named[:200]!r})" if named else "~/.ray/auth_token"
        path = Path(named) if named else Path.home() / ".ray" / "auth_token"
        try:
            with open(path, encoding="utf-8") as fh:
                token = fh.readline(TOKEN_MAX + 2).strip()
        except FileNotFoundError:
            token = ""
        except (OSError, UnicodeDecodeError) as exc:
            raise Outcome(REFUSED, f"cannot read the Ray token in {where}: "
                                   f"{getattr(exc, 'strerror', None) or exc}") from None
        if not token and named:  # as Ray: a named file must hold the token
            raise Outcome(REFUSED, f"{where} is missing or empty; nothing stopped")
    if not token:
        return None
    if len(token) > TOKEN_MAX or not token.isascii() or not token.isprintable() \
            or " " in token:
        raise Outcome(REFUSED, f"the Ray token in {where} is not one line of printable "
                               f"ASCII up to {TOKEN_MAX} characters; nothing stopped")
    return token, where


def _call(address: str, method: str, path: str, token: tuple[str, str] | None) -> dict:
    headers = {"Authorization": "Bearer " + token[0]} if token else {}
    req = urllib.request.Request(address.rstrip("/") + path, method=method, headers=headers,
                                 data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=TOOL_TIMEOUT) as resp:  # noqa: S310
            raw = resp.read(1 << 20)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise Outcome(REFUSED, f"Ray knows no job at {path}; nothing stopped") from None
        if exc.code in (401, 403):
            sent = f"the token from {token[1]}" if token else "no token (none found)"
            raise Outcome(REFUSED, f"Ray's dashboard refused {sent} (HTTP {exc.code} to "
                                   f"{method} {path}): set $RAY_AUTH_TOKEN or "
                                   "$RAY_AUTH_TOKEN_PATH to this cluster's token, or write it "
                                   "to ~/.ray/auth_token; nothing stopped") from None
        raise Outcome(REFUSED, f"Ray answered HTTP {exc.code} to {method} {path}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Outcome(REFUSED, f"cannot reach Ray at {address}: {reason}") from None
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Outcome(REFUSED, f"Ray's answer to {method} {path} is not JSON (is "
                               f"{address} a Ray dashboard?); nothing stopped") from None
    if not isinstance(body, dict):
        raise Outcome(REFUSED, f"Ray's answer to {method} {path} is not a JSON object")
    return body


def act(args) -> str:
    if not args.address.startswith(("http://", "https://")):
        raise Outcome(USAGE, f"--address {args.address!r} is not an http(s) URL")
    path = "/api/jobs/" + urllib.parse.quote(args.job_id, safe="")
    token = _token()
    info = _call(args.address, "GET", path, token)
    meta = info.get("metadata")
    owner = meta.get("tenant") if isinstance(meta, dict) else None
    if not isinstance(owner, str) or not same_owner(owner, args.tenant):
        raise Outcome(REFUSED, f"Ray job {args.job_id} belongs to tenant {owner!r}, "
                               f"not to {args.tenant!r}; nothing stopped")
    status = str(info.get("status", ""))
    if status not in ACTIVE:
        raise Outcome(ALREADY_ENDED, f"Ray job {args.job_id} is {status}: already ended, "
                                     "nothing to do")
    if args.dry_run:
        raise Outcome(DRY_RUN, f"dry run: would stop Ray job {args.job_id} ({status}); "
                               "nothing stopped")
    if not _call(args.address, "POST", path + "/stop", token).get("stopped"):
        raise Outcome(ALREADY_ENDED, f"Ray job {args.job_id} had already ended; nothing "
                                     "to do")
    return f"stopped Ray job {args.job_id} (tenant {owner}, was {status}); best step " \
           f"{args.best_step or '?'} {args.best_checkpoint}".rstrip()


def run(args) -> int:
    return finish("ray", act, args)
