# One image for every role of docker-compose.yml: api, worker, train-worker, beat, mlflow, simulate.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY vsandx vsandx
COPY pipeline pipeline
COPY data data
COPY models models
COPY training training
COPY diagnosis diagnosis
COPY service service
COPY cli cli
RUN pip install --no-cache-dir '.[pipeline,models,training,service]'
ENV VSANDX_DATA_DIR=/var/lib/vsandx
VOLUME ["/var/lib/vsandx"]
ENTRYPOINT ["vsandx"]
CMD ["--help"]
