FROM python:3.11.11-slim
WORKDIR /srv/covworker
COPY pyproject.toml README.md constraints.txt ./
COPY app ./app
COPY middleware ./middleware
RUN pip install --no-cache-dir -c constraints.txt .
USER nobody
CMD ["dramatiq", "app.actors", "--processes", "2", "--threads", "8"]
