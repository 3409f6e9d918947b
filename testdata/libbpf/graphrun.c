// graphrun loads a BPF object with libbpf (one BTF object for the maps and
// the programs, which the kernel's graph type matching needs) and test-runs
// programs of it in turn, for bpfvm's kernel comparisons (graph_test.go):
//
//	graphrun OBJ PROG[:LEN] ...   load the named programs, run each in order
//	                              on a zeroed packet of LEN bytes (default
//	                              64), print "PROG RET" per run
//	graphrun -v OBJ PROG          load PROG alone, print "ok" or the
//	                              verifier log after "reject"
//	graphrun -r N OBJ PROG        run PROG N times in one test run, print
//	                              "PROG RET NS" (the kernel's mean time)
//
// Built by the test with gcc against libbpf-dev; the test skips without it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

static char logbuf[1 << 20];

static int quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return 0;
}

int main(int argc, char **argv)
{
	int verify = 0, repeat = 1, i, first = 1;
	struct bpf_object *obj;
	struct bpf_program *p;

	libbpf_set_print(quiet);
	if (argc > 1 && !strcmp(argv[1], "-v")) {
		verify = 1;
		first = 2;
	} else if (argc > 2 && !strcmp(argv[1], "-r")) {
		repeat = atoi(argv[2]);
		first = 3;
	}
	if (argc < first + 2) {
		fprintf(stderr, "usage: graphrun [-v] OBJ PROG[:LEN]...\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[first], NULL);
	if (!obj) {
		printf("open failed\n");
		return 1;
	}
	bpf_object__for_each_program(p, obj) {
		int want = 0;

		for (i = first + 1; i < argc; i++) {
			size_t n = strcspn(argv[i], ":");

			if (strlen(bpf_program__name(p)) == n && !strncmp(bpf_program__name(p), argv[i], n))
				want = 1;
		}
		bpf_program__set_autoload(p, want);
		if (want && verify)
			bpf_program__set_log_buf(p, logbuf, sizeof(logbuf));
	}
	if (bpf_object__load(obj)) {
		if (verify) {
			printf("reject\n%s", logbuf);
			return 0;
		}
		printf("load failed\n");
		return 1;
	}
	if (verify) {
		printf("ok\n");
		return 0;
	}
	for (i = first + 1; i < argc; i++) {
		char name[128];
		unsigned char data[4096] = {0};
		int len = 64;
		char *colon;

		snprintf(name, sizeof(name), "%s", argv[i]);
		colon = strchr(name, ':');
		if (colon) {
			*colon = 0;
			len = atoi(colon + 1);
		}
		p = bpf_object__find_program_by_name(obj, name);
		if (!p) {
			printf("%s missing\n", name);
			return 1;
		}
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = data, .data_size_in = len, .repeat = repeat);
		if (bpf_prog_test_run_opts(bpf_program__fd(p), &opts)) {
			printf("%s run failed\n", name);
			return 1;
		}
		if (repeat > 1)
			printf("%s %d %u\n", name, (int)opts.retval, opts.duration);
		else
			printf("%s %d\n", name, (int)opts.retval);
	}
	bpf_object__close(obj);
	return 0;
}
