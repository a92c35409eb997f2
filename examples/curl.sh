#!/usr/bin/env bash
# Two calls on one conversation with curl: the second sends only the new
# message, and the model still sees the first exchange.
#   RECALL_URL=http://127.0.0.1:8080 OPENAI_API_KEY=sk-... examples/curl.sh
set -euo pipefail
url=${RECALL_URL:-http://127.0.0.1:8080}
conv=${CONV:-curl-demo-$$}
for msg in "My name is Ada. Remember it." "What is my name?"; do
  curl -sS "$url/v1/chat/completions" \
    -H "Authorization: Bearer ${OPENAI_API_KEY:?set OPENAI_API_KEY}" \
    -H "Content-Type: application/json" \
    -H "X-Conversation-ID: $conv" \
    -D - \
    -d "{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"$msg\"}]}"
  echo
done
