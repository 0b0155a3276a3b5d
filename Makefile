# Convenience targets; every one is a plain `go` command underneath, so a
# machine with only Go installed needs none of them.
.PHONY: demo test ci bench build
build:
	go build -o bin/crawler ./cmd/crawler
demo:
	go run ./cmd/crawler demo
test:
	go test ./...
ci:
	bash .ci/run
