"""Submit, wait and read results from asyncio with ``client.aio``; the loop is never blocked."""

import asyncio

import vertexbatch as vb


async def main() -> None:
    async with vb.Client.from_env().aio as aio:  # closes the client at the end
        await _review(aio)


async def _review(aio: vb.AsyncClient) -> None:
    params = {"max_tokens": 256, "messages": [{"role": "user", "content": "Review this diff."}]}
    requests = [vb.ClaudeRequest("a", params), vb.ClaudeRequest("b", params)]
    job = await aio.submit_claude("asyncio-1", "claude-sonnet-4-5", requests)
    status = await aio.wait(job, floor=1)  # asyncio.sleep between polls
    print(job.id, status.state)
    async for result in aio.results(job):  # streamed, a few hundred results ahead
        print(result.key, result.outcome, result.text[:40])


asyncio.run(main())
