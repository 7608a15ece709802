"""Which tenant owns an MLflow experiment: what the platform set, never a name.

An experiment is tenant T's when T's policy table lists its id (``mlflow_experiments``),
or, on a server running MLflow's basic-auth app, when T's MLflow user (``mlflow_user``)
holds EDIT or MANAGE on it: its effective permission, as the server resolves it for that
user's own requests (MLflow gives an experiment's creator MANAGE, and only a holder of
MANAGE or an admin can grant more). An experiment no tenant owns, or that the MLflow users
of two tenants may both write, is nobody's: said once, never read. A listed id is its
tenant's whatever the permissions say (the platform listed it).

Permissions are asked of the server with the controller's own credentials, which must be
an MLflow admin's: ``GET /api/3.0/mlflow/users/permissions/get`` (MLflow 3), else
``/api/2.0/mlflow/experiments/permissions/get`` (MLflow 2, explicit grants only). An
answer is kept ``ttl`` seconds and then asked again (the old one holds meanwhile); a poll
asks at most ``lookups`` questions and spends at most its time budget on them, so many new
experiments are resolved over several polls, and stay nobody's until then.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

WRITE = frozenset({"EDIT", "MANAGE"})
DEFAULT_TTL = 300.0  # seconds an answer is kept
DEFAULT_LOOKUPS = 200  # permission questions per poll
NO_AUTH = "NO_AUTH"  # what the asker says of a server without MLflow's auth app

V3 = "/api/3.0/mlflow/users/permissions/get"
V2 = "/api/2.0/mlflow/experiments/permissions/get"


class PermissionAsker:
    """``ask(user, experiment_id)`` -> the user's permission name on the experiment
    (``READ``, ``EDIT``, ``MANAGE``, ``NO_PERMISSIONS``, ...), or NO_AUTH."""

    def __init__(self, uri: str, timeout: float = 10.0) -> None:
        from mlflow.utils.credentials import get_default_host_creds
        from mlflow.utils.rest_utils import http_request

        self._creds, self._request, self.timeout = get_default_host_creds(uri), http_request, timeout
        self._v2 = False

    def __call__(self, user: str, experiment_id: str) -> str:
        if not self._v2:
            resp = self._get(V3, username=user, resource_type="experiment",
                             resource_id=experiment_id)
            if resp.status_code == 200:
                return str(resp.json().get("permission", "NO_PERMISSIONS"))
            if _error_code(resp) is not None:  # the route exists: a real error
                _raise(resp, V3)
            self._v2 = True  # no such route: MLflow 2, or no auth app at all
        resp = self._get(V2, experiment_id=experiment_id, username=user)
        if resp.status_code == 200:
            return str(resp.json().get("experiment_permission", {}).get("permission",
                                                                        "NO_PERMISSIONS"))
        code = _error_code(resp)
        if code == "RESOURCE_DOES_NOT_EXIST":
            return "NO_PERMISSIONS"  # no grant of its own
        if code is None and resp.status_code == 404:
            self._v2 = False
            return NO_AUTH
        _raise(resp, V2)

    def _get(self, endpoint: str, **params: str):
        return self._request(self._creds, endpoint, "GET", params=params, max_retries=0,
                             timeout=self.timeout, raise_on_status=False)


def _error_code(resp: Any) -> str | None:
    try:
        return json.loads(resp.text).get("error_code")
    except (ValueError, AttributeError):
        return None


def _raise(resp: Any, endpoint: str):
    raise RuntimeError(f"{endpoint} answered {resp.status_code}"
                       + (f" ({_error_code(resp)})" if _error_code(resp) else ""))


class Owners:
    """Experiment id -> its tenant, or None with the reason it is nobody's."""

    def __init__(self, policy: Any, ask: Callable[[str, str], str] | None = None, *,
                 ttl: float = DEFAULT_TTL, lookups: int = DEFAULT_LOOKUPS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.listed = {e: r.tenant for r in policy.rules for e in r.mlflow_experiments}
        self.users = {r.tenant: r.mlflow_user for r in policy.rules if r.mlflow_user}
        self.ask, self.ttl, self.lookups, self.clock = ask, ttl, lookups, clock
        self._known: dict[str, tuple[float, str | None, str]] = {}  # id -> (when, tenant, why)
        self._left, self._until = lookups, 0.0
        self.no_auth = False  # the server has no auth app: mlflow_user owns nothing

    def begin(self, until: float) -> None:
        """A new poll: ``lookups`` questions, none after ``until`` (its clock)."""
        self._left, self._until = self.lookups, until

    def forget(self, keep: set[str]) -> None:
        """Drop the answers of experiments no longer listed (memory stays bounded)."""
        for e in [e for e in self._known if e not in keep]:
            del self._known[e]

    def owner(self, experiment_id: str) -> tuple[str | None, str]:
        """(tenant, "") or (None, why it is nobody's); ``why`` is "" while it waits for
        its permissions to be asked (a later poll)."""
        tenant = self.listed.get(experiment_id)
        if tenant is not None:
            return tenant, ""
        if not self.users or self.ask is None or self.no_auth:
            return None, "not listed in any tenant's mlflow_experiments"
        known = self._known.get(experiment_id)
        if known is not None and self.clock() - known[0] < self.ttl:
            return known[1], known[2]
        if self._left < len(self.users) or self.clock() > self._until:
            return (known[1], known[2]) if known is not None else (None, "")
        self._left -= len(self.users)
        writers = []
        for tenant, user in self.users.items():
            permission = self.ask(user, experiment_id)  # errors: the caller's, said once
            if permission == NO_AUTH:
                self.no_auth = True
                return None, "not listed, and the server has no MLflow auth"
            if permission in WRITE:
                writers.append(tenant)
        if len(writers) == 1:
            answer: tuple[str | None, str] = writers[0], ""
        elif writers:
            answer = None, f"the MLflow users of tenants {', '.join(sorted(writers))} may all " \
                           "write it"
        else:
            answer = None, "no tenant lists it or has an MLflow user that may write it"
        self._known[experiment_id] = (self.clock(), *answer)
        return answer
