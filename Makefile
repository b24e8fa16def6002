# Convenience front end over CMake. `make run` builds and runs the main job
# on its embedded default; `make test` builds and runs every test.
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)
CTEST_FLAGS ?=

.PHONY: all build run test install clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# A real program under `uswap run` with its live counters, then the designs
# side by side (bench/run_main.sh says what each step is).
run: build
	bash bench/run_main.sh $(BUILD)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
