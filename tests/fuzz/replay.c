/*
 * Runs a libFuzzer target's LLVMFuzzerTestOneInput over every file of the directories (or
 * files) given, without libFuzzer: how meson test replays the committed corpus in the normal
 * builds, ASan and UBSan included. A finding aborts, and the file is named first.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        uint8_t *buf = NULL;
        long len;

        if (!f || fseek(f, 0, SEEK_END) < 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0 ||
            !(buf = malloc((size_t)len + 1)) || fread(buf, 1, (size_t)len, f) != (size_t)len) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                if (f)
                        fclose(f);
                free(buf);
                return -1;
        }
        fclose(f);
        fprintf(stderr, "replay: %s\n", path);
        LLVMFuzzerTestOneInput(buf, (size_t)len);
        free(buf);
        return 0;
}

static int run_dir(const char *dir, int *count)
{
        struct dirent **names;
        int n = scandir(dir, &names, NULL, alphasort), r = 0;
        char path[4096];

        if (n < 0) {
                fprintf(stderr, "replay: cannot list %s\n", dir);
                return -1;
        }
        for (int i = 0; i < n; i++) {
                if (names[i]->d_name[0] != '.' && r == 0) {
                        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
                        r = run_file(path);
                        (*count)++;
                }
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char **argv)
{
        int count = 0;
        struct stat st;

        for (int i = 1; i < argc; i++) {
                int r = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? run_dir(argv[i], &count)
                                                                       : run_file(argv[i]);

                if (r < 0)
                        return 1;
                count += !S_ISDIR(st.st_mode);
        }
        if (count == 0) {
                fprintf(stderr, "replay: no inputs: an empty corpus tests nothing\n");
                return 1;
        }
        printf("replay: %d inputs, no finding\n", count);
        return 0;
}
