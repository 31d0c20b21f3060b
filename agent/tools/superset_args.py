"""Argument schemas of the Superset tools (SPEC §4): the contract the model sees.

Every schema forbids unknown keys and bounds every value, so a bad call becomes a clear
validation error for the model and never reaches Superset.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CompareArgs",
    "DashboardIdArgs",
    "DashboardListArgs",
    "DatasetIdArgs",
    "DeleteDashboardArgs",
    "DeleteDatasetArgs",
    "EnvArgs",
    "ListArgs",
    "MigrateArgs",
    "MigrationHistoryArgs",
    "PreviewDatasetArgs",
    "SetPublishedArgs",
    "UpdateDashboardArgs",
    "UpdateDatasetArgs",
]

EnvId = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$",
              description="Environment name, e.g. ss-dev, staging or prod. Defaults to the "
              "environment selected in the UI.")
ObjectId = Field(ge=1, le=2**31 - 1)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class EnvArgs(_Args):
    env_id: str | None = EnvId


class ListArgs(EnvArgs):
    search: str | None = Field(default=None, max_length=200,
                               description="Only objects whose title/name contains this text.")
    page: int = Field(default=0, ge=0, le=10_000, description="Page number, from 0.")
    page_size: int = Field(default=25, ge=1, le=100)


class DashboardListArgs(ListArgs):
    published: bool | None = Field(
        default=None, description="Only published (true) or only draft (false) dashboards.")


class DashboardIdArgs(EnvArgs):
    dashboard_id: int = ObjectId


class DatasetIdArgs(EnvArgs):
    dataset_id: int = ObjectId


class PreviewDatasetArgs(DatasetIdArgs):
    limit: int = Field(default=10, ge=1, le=100)


class UpdateDashboardArgs(DashboardIdArgs):
    title: str | None = Field(default=None, min_length=1, max_length=500)
    slug: str | None = Field(default=None, max_length=255, pattern=r"^[A-Za-z0-9_-]*$")
    description: str | None = Field(default=None, max_length=2000)
    owners: list[int] | None = Field(default=None, max_length=50,
                                     description="User ids of the new owners.")


class SetPublishedArgs(DashboardIdArgs):
    published: bool


class DeleteDashboardArgs(DashboardIdArgs):
    pass


class UpdateDatasetArgs(DatasetIdArgs):
    description: str | None = Field(default=None, max_length=2000)
    cache_timeout: int | None = Field(default=None, ge=0, le=31_536_000,
                                      description="Seconds; 0 means no cache.")
    owners: list[int] | None = Field(default=None, max_length=50)


class DeleteDatasetArgs(DatasetIdArgs):
    pass


class CompareArgs(_Args):
    dashboard_id: int = ObjectId
    source_env: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    target_env: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")


class MigrateArgs(CompareArgs):
    pass


class MigrationHistoryArgs(_Args):
    limit: int = Field(default=20, ge=1, le=100)
    dashboard_id: int | None = Field(default=None, ge=1, le=2**31 - 1)
