"""The broker's authorizer from its configuration (Kafka's `authorizer.class.name`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from groupcoord.security.acl_store import AclStore, DurableAuthorizer
from groupcoord.security.authorizer import parse_super_users

if TYPE_CHECKING:
    from groupcoord.server.config import BrokerConfig

log = logging.getLogger("groupcoord.server")


def build_authorizer(cfg: BrokerConfig) -> DurableAuthorizer | None:
    """None without `--authorizer standard`; else the ACLs replayed from the data dir."""
    if cfg.authorizer == "none":
        return None
    authorizer = DurableAuthorizer(
        AclStore(cfg.data_dir, cfg.file_io), parse_super_users(cfg.super_users),
        allow_everyone_if_no_acl_found=cfg.allow_everyone_if_no_acl_found)
    log.info("standard authorizer: %d ACLs loaded, super.users=%s, "
             "allow.everyone.if.no.acl.found=%s", len(authorizer),
             ",".join(sorted(authorizer.super_users)) or "none",
             str(cfg.allow_everyone_if_no_acl_found).lower())
    return authorizer
