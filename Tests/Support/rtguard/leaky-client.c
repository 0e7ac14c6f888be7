/*
 * leaky-client.c - a JACK client whose process callback allocates and frees
 * once, in its 500th cycle, through a function named leaky_allocation: the
 * positive control for rtguard (it must count one malloc and one free and
 * record a stack that names that function). Runs for the given seconds.
 *
 *   cc -rdynamic -o leaky-client leaky-client.c -ljack
 *   leaky-client SERVER SECONDS
 */
#include <jack/jack.h>
#include <stdlib.h>
#include <unistd.h>

static int cycles;

__attribute__((noinline)) void *leaky_allocation(void)
{
    return malloc(64);
}

static int process(jack_nframes_t frames, void *arg)
{
    (void)frames;
    (void)arg;
    if (++cycles == 500)
        free(leaky_allocation());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    jack_client_t *client = jack_client_open("lmleaky", JackNoStartServer | JackServerName, NULL, argv[1]);
    if (client == NULL)
        return 1;
    jack_set_process_callback(client, process, NULL);
    if (jack_activate(client) != 0)
        return 1;
    sleep((unsigned)atoi(argv[2]));
    jack_client_close(client);
    return 0;
}
