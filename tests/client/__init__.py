"""The Client, client.aio, configuration, lifecycle, retries and cold imports."""
