FROM python:3.11.11-slim
WORKDIR /srv/covworker
COPY pyproject.toml README.md constraints.txt ./
COPY app ./app
COPY middleware ./middleware
RUN pip install --no-cache-dir -c constraints.txt .
# glibc's malloc arenas: 1 per process, not 8 per core. A worker's threads take
# turns parsing big uploads and merging, and with an arena each, each keeps
# what it freed (README, "MALLOC_ARENA_MAX"; BENCHMARKS.md, "Worker memory").
ENV MALLOC_ARENA_MAX=1
USER nobody
CMD ["dramatiq", "app.actors", "--processes", "2", "--threads", "8"]
