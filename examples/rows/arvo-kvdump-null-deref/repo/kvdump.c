/* kvdump: print the known `key=value` records of a file through their handlers. */
#include <stdio.h>
#include <string.h>

struct handler {
    const char *key;
    void (*print)(const char *value);
};

static void print_name(const char *value) { printf("name: %s\n", value); }
static void print_size(const char *value) { printf("size: %s bytes\n", value); }

static struct handler handlers[] = {{"name", print_name}, {"size", print_size}};

static struct handler *find_handler(const char *key) {
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(handlers[i].key, key) == 0)
            return &handlers[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    char line[256];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        find_handler(line)->print(eq + 1);
    }
    fclose(f);
    return 0;
}
