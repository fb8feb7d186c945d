/*
 * delayfwd: a transparent wire between two network interfaces that holds every
 * frame for a fixed time, first in first out per direction.
 *
 * The NFS lab puts it in the middle namespace, between the client's and the
 * server's capture points, because this kernel has no netem qdisc and a delay
 * on either end's own interface lands on the wrong side of that end's capture
 * (egress: before tcpdump's tap; ingress: after it).
 *
 * Usage: delayfwd IF_A IF_B DELAY_A_TO_B_US DELAY_B_TO_A_US LIFETIME_S
 * Frames arriving on IF_A leave on IF_B after DELAY_A_TO_B_US microseconds, and
 * back. It exits after LIFETIME_S seconds whatever happens (the lab also kills
 * it), so a failed test cannot leave it running.
 *
 * AF_PACKET sockets: packet(7). PACKET_IGNORE_OUTGOING (Linux 4.20) keeps a
 * socket from reading back the frames it sends. Timer slack is set to 1 ns
 * (prctl(2) PR_SET_TIMERSLACK) so ppoll wakes when a frame is due, not 50 µs later,
 * and the forwarder asks for a real-time priority (sched(7) SCHED_FIFO) so that on
 * a busy machine its wake-ups are not queued behind other work: a late wake-up
 * would add to the delay. It sleeps between frames, and the kernel's real-time
 * throttling bounds it anyway.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define SLOTS 8192   /* frames held per direction; more are dropped (counted) */
#define FRAME_MAX 9216

struct slot { uint64_t due_ns; int length; unsigned char data[FRAME_MAX]; };
struct queue { struct slot *slots; unsigned head, tail; uint64_t delay_ns, dropped, sent; };

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int open_interface(const char *name) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0) { perror("socket(AF_PACKET)"); exit(2); }
    int one = 1;
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
    struct sockaddr_ll address = {0};
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(ETH_P_ALL);
    address.sll_ifindex = (int)if_nametoindex(name);
    if (!address.sll_ifindex) { fprintf(stderr, "delayfwd: no interface %s\n", name); exit(2); }
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0) { perror("bind"); exit(2); }
    struct packet_mreq promiscuous = {0};
    promiscuous.mr_ifindex = address.sll_ifindex;
    promiscuous.mr_type = PACKET_MR_PROMISC;
    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &promiscuous, sizeof promiscuous);
    return fd;
}

/* Read every waiting frame from fd into q, stamped with its due time. */
static void take(int fd, struct queue *q) {
    for (;;) {
        struct slot *s = &q->slots[q->tail % SLOTS];
        struct sockaddr_ll from;
        socklen_t size = sizeof from;
        ssize_t n = recvfrom(fd, s->data, FRAME_MAX, 0, (struct sockaddr *)&from, &size);
        if (n < 0) return;
        if (from.sll_pkttype == PACKET_OUTGOING) continue;
        if (q->tail - q->head >= SLOTS) { q->dropped++; continue; }
        s->length = (int)n;
        s->due_ns = now_ns() + q->delay_ns;
        q->tail++;
    }
}

/* Send every frame of q that is due; returns ns until the next one (or -1). */
static int64_t release(int fd, struct queue *q) {
    uint64_t now = now_ns();
    while (q->head != q->tail) {
        struct slot *s = &q->slots[q->head % SLOTS];
        if (s->due_ns > now) return (int64_t)(s->due_ns - now);
        if (send(fd, s->data, (size_t)s->length, 0) < 0 && errno == EAGAIN) return 20000; /* retry in 20 µs */
        q->sent++;
        q->head++;
    }
    return -1;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: delayfwd IF_A IF_B DELAY_A_TO_B_US DELAY_B_TO_A_US LIFETIME_S\n");
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    struct sched_param priority = {.sched_priority = 10};
    if (sched_setscheduler(0, SCHED_FIFO, &priority) < 0) perror("delayfwd: SCHED_FIFO (continuing without)");
    int a = open_interface(argv[1]), b = open_interface(argv[2]);
    struct queue to_b = {calloc(SLOTS, sizeof(struct slot)), 0, 0, strtoull(argv[3], NULL, 10) * 1000ull, 0, 0};
    struct queue to_a = {calloc(SLOTS, sizeof(struct slot)), 0, 0, strtoull(argv[4], NULL, 10) * 1000ull, 0, 0};
    if (!to_b.slots || !to_a.slots) { fprintf(stderr, "delayfwd: out of memory\n"); return 2; }
    uint64_t end = now_ns() + strtoull(argv[5], NULL, 10) * 1000000000ull;
    struct pollfd watch[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    while (now_ns() < end) {
        int64_t wait_b = release(b, &to_b), wait_a = release(a, &to_a);
        int64_t wait = 100000000; /* at most 100 ms, to check the lifetime */
        if (wait_b >= 0 && wait_b < wait) wait = wait_b;
        if (wait_a >= 0 && wait_a < wait) wait = wait_a;
        struct timespec timeout = {wait / 1000000000, wait % 1000000000};
        if (ppoll(watch, 2, &timeout, NULL) < 0 && errno != EINTR) { perror("ppoll"); return 3; }
        if (watch[0].revents & POLLIN) take(a, &to_b);
        if (watch[1].revents & POLLIN) take(b, &to_a);
    }
    fprintf(stderr, "delayfwd: %llu frames to %s, %llu to %s, %llu dropped (queue full)\n",
            (unsigned long long)to_b.sent, argv[2], (unsigned long long)to_a.sent, argv[1],
            (unsigned long long)(to_b.dropped + to_a.dropped));
    return 0;
}
