"""Durable ACLs: the authorizer's ACL set in the data dir, and changes that persist first.

Kafka keeps ACLs as `AccessControlEntryRecord`s in the metadata log; this broker has no
metadata log, so the whole set is one small JSON file, `acls.json`, rewritten on every
change through the storage `FileIO` seam (temp file, fsync, rename, directory fsync) and
read back at start-up. A change is written before the in-memory index moves, so a failed
write answers an error and changes nothing (`DurableAuthorizer`). Create and delete follow
`AclControlManager.createAcls` / `deleteAcls`: every valid creation succeeds (an ACL that
exists already is not added twice), every filter reports the ACLs it matched, and all the
deletions of one request are applied together.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from groupcoord.security.acl import (
    AclBinding,
    AclBindingFilter,
    InvalidAcl,
    validate_filter,
    validate_new_acl,
)
from groupcoord.security.authorizer import StandardAuthorizer
from groupcoord.storage.fileio import OS_FILE_IO, FileIO
from groupcoord.wire.errors import ErrorCode

ACL_FILE = "acls.json"
_FORMAT_VERSION = 1
# An ACL binding or filter, checked before a change.
_Checked = TypeVar("_Checked", AclBinding, AclBindingFilter)
# `QuorumController.MAX_RECORDS_PER_USER_OP`: one request adds or removes at most this many.
MAX_RECORDS_PER_USER_OP = 10_000
TOO_LARGE = "Unable to perform excessively large batch operation."


class AclStoreError(Exception):
    """The ACL file exists but cannot be read: the broker must not start without its ACLs."""


class AclStore:
    def __init__(self, data_dir: str, file_io: FileIO = OS_FILE_IO) -> None:
        self.data_dir = data_dir
        self.path = os.path.join(data_dir, ACL_FILE)
        self.file_io = file_io

    def load(self) -> list[AclBinding]:
        try:
            doc = json.loads(self.file_io.read_text(self.path))
            if doc.get("version") != _FORMAT_VERSION:
                raise ValueError(f"unknown format version {doc.get('version')!r}")
            return [AclBinding.from_json(row) for row in doc["acls"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise AclStoreError(f"cannot read {self.path}: {exc}") from exc

    def save(self, acls: Iterable[AclBinding]) -> None:
        """Replace the file with `acls`; raises OSError and leaves the old file otherwise."""
        doc = {"version": _FORMAT_VERSION, "acls": [a.to_json() for a in sorted(acls)]}
        data = json.dumps(doc, separators=(",", ":")).encode()
        self.file_io.makedirs(self.data_dir)
        self.file_io.replace_file(self.path, data)
        self.file_io.fsync_dir(self.data_dir)


@dataclass(slots=True)
class CreateResult:
    error_code: int = 0
    error_message: str | None = None


@dataclass(slots=True)
class DeleteResult:
    error_code: int = 0
    error_message: str | None = None
    matching: list[AclBinding] = field(default_factory=list)


class DurableAuthorizer(StandardAuthorizer):
    """The authorizer the broker runs: decisions from the index, changes through the store."""

    def __init__(self, store: AclStore | None, super_users: Iterable[str] = (), *,
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        super().__init__(super_users, allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found,
                         acls=store.load() if store is not None else ())
        self.store = store

    def create_acls(self, bindings: list[AclBinding]) -> list[CreateResult]:
        results: list[CreateResult] = []
        new: list[AclBinding] = []
        pending: set[AclBinding] = set()
        for acl in bindings:
            problem = _invalid(validate_new_acl, acl)
            if problem is not None:
                results.append(CreateResult(ErrorCode.INVALID_REQUEST, problem))
                continue
            if acl not in self and acl not in pending:  # a set: a 10,001-ACL request is linear
                pending.add(acl)
                new.append(acl)
            results.append(CreateResult())
        if len(new) > MAX_RECORDS_PER_USER_OP:
            # Kafka's controller refuses the whole batch (`EventHandlerExceptionInfo`).
            return [r if r.error_code else CreateResult(ErrorCode.POLICY_VIOLATION, TOO_LARGE)
                    for r in results]
        if new:
            failure = self._persist(set(self.acls()) | set(new))
            if failure is not None:
                return [r if r.error_code else CreateResult(*failure) for r in results]
            for acl in new:
                self.add(acl)
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[DeleteResult]:
        results: list[DeleteResult] = []
        doomed: set[AclBinding] = set()
        current = self.acls()
        for acl_filter in filters:
            problem = _invalid(validate_filter, acl_filter)
            if problem is not None:
                results.append(DeleteResult(ErrorCode.INVALID_REQUEST, problem))
                continue
            matching = [a for a in current if acl_filter.matches(a)]
            doomed.update(matching)
            if len(doomed) > MAX_RECORDS_PER_USER_OP:
                # `AclControlManager.deleteAcls`: the whole request fails, nothing is removed.
                message = (f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a "
                           "single delete operation.")
                return [DeleteResult(ErrorCode.INVALID_REQUEST, message) for _ in filters]
            results.append(DeleteResult(matching=matching))
        if doomed:
            failure = self._persist(set(current) - doomed)
            if failure is not None:
                return [r if r.error_code else DeleteResult(*failure) for r in results]
            for acl in doomed:
                self.remove(acl)
        return results

    def _persist(self, acls: set[AclBinding]) -> tuple[int, str] | None:
        """Write the new set; (error code, message) when the disk refuses it."""
        if self.store is None:
            return None
        try:
            self.store.save(acls)
        except OSError as exc:
            return ErrorCode.UNKNOWN_SERVER_ERROR, f"Unable to persist the ACLs: {exc}"
        return None


def _invalid(validate: Callable[[_Checked], None], item: _Checked) -> str | None:
    """Why `validate` refuses `item` (the controller's INVALID_REQUEST message), or None."""
    try:
        validate(item)
    except InvalidAcl as exc:
        return str(exc)
    return None
