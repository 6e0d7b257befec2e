# The two quick-start commands: `make run` and `make test`.
# Both install missing Debian packages first (scripts/install-deps.sh).
BUILD ?= build
JOBS  ?= $(shell nproc)
# CMake's generated makefiles call make recursively; without this every level prints
# "Entering directory" lines.
MAKEFLAGS += --no-print-directory

.PHONY: deps configure build run test bench clean

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

# Progress lines go to $(BUILD)/build.log; compiler errors and warnings (stderr) stay on the terminal.
build: configure
	@echo "tagcsim: building in $(BUILD)/ with $(JOBS) jobs (the first build takes a few minutes; progress in $(BUILD)/build.log)"
	@cmake --build $(BUILD) -j $(JOBS) >$(BUILD)/build.log

run: build
	@$(BUILD)/tagcsim run scenarios/quickstart.yaml

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

bench: build
	@bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
