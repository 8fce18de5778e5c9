"""Point the Google clients themselves at the local stack, from the variables it prints."""

import os

from google import genai
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1, storage
from google.genai import types
from google.oauth2.credentials import Credentials

vertex_endpoint = os.environ["VERTEXBATCH_VERTEX_ENDPOINT"]  # "http://..." (the scheme matters)
storage_endpoint = os.environ["STORAGE_EMULATOR_HOST"]
project = os.environ["GOOGLE_CLOUD_PROJECT"]
location = os.environ["GOOGLE_CLOUD_LOCATION"]

jobs = aiplatform_v1.JobServiceClient(
    transport="rest",
    credentials=AnonymousCredentials(),
    client_options={"api_endpoint": vertex_endpoint},
)
# google-cloud-storage also honours STORAGE_EMULATOR_HOST on its own.
gcs = storage.Client(
    project=project,
    credentials=AnonymousCredentials(),
    client_options={"api_endpoint": storage_endpoint},
)
gen = genai.Client(
    vertexai=True,
    project=project,
    location=location,
    credentials=Credentials(token="x"),
    http_options=types.HttpOptions(base_url=vertex_endpoint, api_version="v1"),
)

# Stage an input with GCS, create a Gemini batch job with google-genai, read it with aiplatform.
bucket = gcs.bucket(os.environ["VERTEXBATCH_BUCKET"])
line = '{"request": {"contents": [{"role": "user", "parts": [{"text": "Hello."}]}]}}\n'
bucket.blob("raw/input.jsonl").upload_from_string(line)
batch = gen.batches.create(
    model="gemini-2.5-flash",
    src=f"gs://{bucket.name}/raw/input.jsonl",
    config=types.CreateBatchJobConfig(dest=f"gs://{bucket.name}/raw/output"),
)
job = jobs.get_batch_prediction_job(name=batch.name)
print(job.display_name, job.model, job.state.name)
