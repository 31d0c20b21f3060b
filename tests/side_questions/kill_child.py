"""Child process of the kill test: submits one side question and waits to be SIGKILLed."""

from __future__ import annotations

import asyncio
import sys

from agent.settings import apply_offline_defaults

apply_offline_defaults()

from agent.model_gateway import LiteLLMGateway  # noqa: E402
from agent.settings import Settings  # noqa: E402
from side_questions.service import SideQuestionService  # noqa: E402
from side_questions.snapshot_store import SnapshotStore  # noqa: E402
from storage import Database  # noqa: E402


async def main(database_url: str, base_url: str, api_key: str, model: str) -> None:
    settings = Settings(database_url=database_url, agent_model=model, agent_api_base=base_url,
                        agent_api_key=api_key, auth_jwt_secret="k" * 40)
    db = Database(database_url)
    service = SideQuestionService(settings=settings, db=db, gateway=LiteLLMGateway(),
                                  snapshots=SnapshotStore(db))
    result = await service.submit(parent_id="conv-1", question="Long question?",
                                  client_request_id="kill")
    print(result.request.id, flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
