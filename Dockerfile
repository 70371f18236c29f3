# One image for every vsandx role (simulate now; api, worker, train-worker later).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY vsandx vsandx
COPY pipeline pipeline
COPY data data
COPY models models
COPY training training
COPY service service
RUN pip install --no-cache-dir .
ENV VSANDX_DATA_DIR=/var/lib/vsandx
VOLUME ["/var/lib/vsandx"]
ENTRYPOINT ["vsandx"]
CMD ["--help"]
