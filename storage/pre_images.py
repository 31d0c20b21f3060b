"""Pre-images (issue 15): what an approved write was about to change, kept for its undo.

One row per executed write, written in the same transaction as the write's `executing`
audit row (write-ahead), so a change that reached Superset always has its copy: the
object's export bundle (dashboards, datasets) and its editable fields. `after` is the
object's fingerprint read right after the write succeeded; an undo compares it with the
object now to tell whether someone changed it since. Unlike the audit log this table is
updated (`after`, `undone_by`); the audit rows it belongs to never are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Index, LargeBinary
from sqlmodel import Field, Session, SQLModel, col, select

from storage.models import utcnow

__all__ = ["PreImage", "add_pre_image", "get_for_audit", "mark_undone", "set_after",
           "undo_states"]


class PreImage(SQLModel, table=True):
    __tablename__ = "pre_images"
    __table_args__ = (Index("ix_pre_images_audit", "audit_id", unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    audit_id: int  # the `executing` audit row of the write
    tool: str = Field(max_length=64)
    env_id: str | None = Field(default=None, max_length=64)
    kind: str = Field(max_length=16)  # dashboard | dataset
    object_id: int | None = None  # its id in env_id before the write (None: did not exist)
    object_uuid: str | None = Field(default=None, max_length=64)
    existed: bool = True  # False: the write created it (a migration into a new target)
    fields: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    bundle: bytes | None = Field(default=None, sa_column=Column(LargeBinary))
    after: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    undone_by: int | None = None  # the audit row of the undo that restored it
    created_at: datetime = Field(default_factory=utcnow,
                                 sa_column=Column(DateTime(timezone=True), nullable=False))


def add_pre_image(*, session: Session, audit_id: int, tool: str, env_id: str | None,
                  kind: str, object_id: int | None, object_uuid: str | None, existed: bool,
                  fields: dict[str, Any] | None, bundle: bytes | None) -> PreImage:
    row = PreImage(audit_id=audit_id, tool=tool, env_id=env_id, kind=kind,
                   object_id=object_id, object_uuid=object_uuid, existed=existed,
                   fields=fields, bundle=bundle)
    session.add(row)
    session.flush()
    return row


def get_for_audit(*, session: Session, audit_id: int) -> PreImage | None:
    return session.exec(select(PreImage).where(PreImage.audit_id == audit_id)).first()


def set_after(*, session: Session, audit_id: int, after: dict[str, Any]) -> None:
    row = get_for_audit(session=session, audit_id=audit_id)
    if row is not None:
        row.after = after
        session.add(row)


def mark_undone(*, session: Session, audit_id: int, undo_audit_id: int) -> None:
    row = get_for_audit(session=session, audit_id=audit_id)
    if row is not None:
        row.undone_by = undo_audit_id
        session.add(row)


def undo_states(*, session: Session, audit_ids: list[int]) -> dict[int, str]:
    """For the audit rows among `audit_ids` that kept a pre-image: "available", or
    "undone by #<audit id>"."""
    if not audit_ids:
        return {}
    rows = session.exec(select(PreImage).where(col(PreImage.audit_id).in_(audit_ids))).all()
    return {row.audit_id: "available" if row.undone_by is None
            else f"undone by #{row.undone_by}" for row in rows}
