/*
 * rdkperf: a librdkafka load generator for bench/perf.py (--client rdkafka).
 *
 *   rdkperf produce -b HOST:PORT -t TOPIC -n RECORDS -s SIZE [-p PRODUCERS] [-l LINGER_MS]
 *                   [-B BATCH_BYTES] [-x TRANSACTIONAL_ID_PREFIX -T COMMIT_MS] [-X key=value]...
 *   rdkperf consume -b HOST:PORT -t TOPIC -n RECORDS [-w TIMEOUT_S] [-X key=value]...
 *
 * produce: PRODUCERS threads, each with its own rd_kafka_t (one process: the library and the
 * process are paid for once, and getrusage covers them all), each sending RECORDS records of SIZE
 * bytes with no key (librdkafka's sticky partitioner spreads them over every partition), acks=all,
 * enable.idempotence=true, at most 32 MiB queued per producer (the Java client's buffer.memory),
 * batch.size librdkafka's default unless -B says otherwise. The value is one shared buffer passed
 * without RD_KAFKA_MSG_F_COPY, so the client copies nothing of its own. With -x each producer has
 * transactional.id PREFIX-i and commits when its transaction is COMMIT_MS old
 * (commit_transaction flushes the outstanding records first, as librdkafka requires). Latency is
 * delivery report time minus enqueue time, the enqueue time carried in the message opaque.
 *
 * consume: one consumer, assign() of every partition from the beginning (no group), until
 * RECORDS records have been read. isolation.level is librdkafka's default (read_committed) unless
 * -X sets it.
 *
 * Output: one JSON line on stdout. seconds runs from the first send to the last delivery report
 * (produce) or from assign() to the last record (consume); MB is 10^6 bytes of record values;
 * cpu_s is this process's user + system CPU (getrusage). Any delivery failure, fatal error
 * (fenced included), failed commit or timeout exits non-zero with the reason on stderr.
 */
#define _GNU_SOURCE
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROPS 64

static const char *bootstrap, *topic, *txn_prefix;
static long records = 0, size = 1024, producers = 1, commit_ms = 100;
static const char *linger_ms = "5", *batch_bytes = NULL;
static double wait_s = 120;
static const char *props[MAX_PROPS];
static int nprops = 0;
static char *payload;
static pthread_barrier_t ready;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("rdkperf: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void set(rd_kafka_conf_t *conf, const char *key, const char *value) {
    char err[512];
    if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK)
        die("%s=%s: %s", key, value, err);
}

static void set_props(rd_kafka_conf_t *conf) {
    for (int i = 0; i < nprops; i++) {
        char *kv = strdup(props[i]), *eq = strchr(kv, '=');
        if (!eq)
            die("-X %s: expected key=value", props[i]);
        *eq = '\0';
        set(conf, kv, eq + 1);
        free(kv);
    }
}

/* Transport errors are logged and left to librdkafka's retries; a fatal error ends the run. */
static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)opaque;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char why[512];
        rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, why, sizeof why);
        die("fatal error: %s: %s", rd_kafka_err2name(orig), why);
    }
    fprintf(stderr, "rdkperf: %s: %s\n", rd_kafka_err2name(err), reason);
}

typedef struct {
    int index;
    rd_kafka_t *rk;
    uint32_t *lat_us;  /* one per delivered record */
    long delivered;
    int64_t first_send_us, last_dr_us;
} producer_t;

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    producer_t *p = opaque;
    (void)rk;
    if (m->err)
        die("producer %d: delivery failed: %s", p->index, rd_kafka_err2str(m->err));
    int64_t t = now_us();
    if (p->delivered < records)
        p->lat_us[p->delivered] = (uint32_t)(t - (int64_t)(intptr_t)m->_private);
    p->delivered++;
    p->last_dr_us = t;
}

static void txn_check(producer_t *p, rd_kafka_error_t *error, const char *what) {
    if (!error)
        return;
    die("producer %d: %s: %s%s%s", p->index, what, rd_kafka_error_string(error),
        rd_kafka_error_is_fatal(error) ? " (fatal)" : "",
        rd_kafka_error_txn_requires_abort(error) ? " (abortable)" : "");
}

static void *produce_thread(void *arg) {
    producer_t *p = arg;
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    set(conf, "bootstrap.servers", bootstrap);
    set(conf, "acks", "all");
    set(conf, "enable.idempotence", "true");
    set(conf, "linger.ms", linger_ms);
    /* the Java client's buffer.memory (32 MiB): without it librdkafka queues up to 1 GB, and the
       latencies measure that queue rather than the broker */
    set(conf, "queue.buffering.max.kbytes", "32768");
    if (batch_bytes)
        set(conf, "batch.size", batch_bytes);
    set(conf, "client.id", "rdkperf");
    if (txn_prefix) {
        char id[256];
        snprintf(id, sizeof id, "%s-%d", txn_prefix, p->index);
        set(conf, "transactional.id", id);
    }
    set_props(conf);
    rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_conf_set_opaque(conf, p);
    if (!(p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err)))
        die("rd_kafka_new: %s", err);
    rd_kafka_t *rk = p->rk;
    /* Connection, metadata and (transactional) InitProducerId are set up before the clock starts. */
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t merr = rd_kafka_metadata(rk, 0, rkt, &md, 30000);
    if (merr)
        die("metadata of %s: %s", topic, rd_kafka_err2str(merr));
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (txn_prefix)
        txn_check(p, rd_kafka_init_transactions(rk, 30000), "init_transactions");
    pthread_barrier_wait(&ready);

    int64_t txn_start = 0;
    p->first_send_us = now_us();
    if (txn_prefix) {
        txn_check(p, rd_kafka_begin_transaction(rk), "begin_transaction");
        txn_start = p->first_send_us;
    }
    for (long i = 0; i < records; i++) {
        int64_t t = now_us();
        if (txn_prefix && t - txn_start >= commit_ms * 1000) {
            txn_check(p, rd_kafka_commit_transaction(rk, 60000), "commit_transaction");
            txn_check(p, rd_kafka_begin_transaction(rk), "begin_transaction");
            txn_start = t = now_us();
        }
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(payload, (size_t)size),
                RD_KAFKA_V_OPAQUE((void *)(intptr_t)t), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                die("producer %d: produce: %s", p->index, rd_kafka_err2str(e));
            rd_kafka_poll(rk, 1);
        }
        if ((i & 1023) == 0)
            rd_kafka_poll(rk, 0);
    }
    if (txn_prefix)
        txn_check(p, rd_kafka_commit_transaction(rk, 60000), "commit_transaction");
    rd_kafka_resp_err_t ferr = rd_kafka_flush(rk, (int)(wait_s * 1000));
    if (ferr || p->delivered != records)
        die("producer %d: %ld of %ld records delivered: %s", p->index, p->delivered, records,
            rd_kafka_err2str(ferr));
    return NULL;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int produce(void) {
    payload = malloc((size_t)size);
    for (long i = 0; i < size; i++)
        payload[i] = (char)('a' + i % 26);
    producer_t *ps = calloc((size_t)producers, sizeof *ps);
    pthread_t *threads = calloc((size_t)producers, sizeof *threads);
    pthread_barrier_init(&ready, NULL, (unsigned)producers);
    for (int i = 0; i < producers; i++) {
        ps[i].index = i;
        ps[i].lat_us = malloc(sizeof(uint32_t) * (size_t)records);
        if (pthread_create(&threads[i], NULL, produce_thread, &ps[i]))
            die("pthread_create failed");
    }
    for (int i = 0; i < producers; i++)
        pthread_join(threads[i], NULL);
    int64_t first = ps[0].first_send_us, last = ps[0].last_dr_us;
    long total = records * producers, n = 0;
    uint32_t *lat = malloc(sizeof(uint32_t) * (size_t)total);
    for (int i = 0; i < producers; i++) {
        if (ps[i].first_send_us < first) first = ps[i].first_send_us;
        if (ps[i].last_dr_us > last) last = ps[i].last_dr_us;
        memcpy(lat + n, ps[i].lat_us, sizeof(uint32_t) * (size_t)records);
        n += records;
    }
    qsort(lat, (size_t)total, sizeof *lat, cmp_u32);
    double seconds = (last - first) / 1e6, bytes = (double)total * (double)size;
    double cpu = cpu_s(); /* before the producers' teardown, which is not part of the run */
    for (int i = 0; i < producers; i++)
        rd_kafka_destroy(ps[i].rk);
    printf("{\"mode\": \"produce\", \"librdkafka\": \"%s\", \"producers\": %ld, \"transactional\": %s, \"records\": %ld, "
           "\"bytes\": %.0f, \"seconds\": %.6f, \"records_per_s\": %.1f, \"mb_per_s\": %.3f, "
           "\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"cpu_s\": %.3f}\n",
           rd_kafka_version_str(), producers, txn_prefix ? "true" : "false", total, bytes, seconds, total / seconds,
           bytes / 1e6 / seconds, lat[total / 2] / 1e3, lat[(total * 99) / 100] / 1e3, cpu);
    return 0;
}

static int consume(void) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    set(conf, "bootstrap.servers", bootstrap);
    set(conf, "client.id", "rdkperf");
    set(conf, "enable.partition.eof", "false");
    /* librdkafka's assign() wants a group.id; nothing joins or commits with it. */
    set(conf, "group.id", "rdkperf");
    set(conf, "enable.auto.commit", "false");
    set_props(conf);
    rd_kafka_conf_set_error_cb(conf, error_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk)
        die("rd_kafka_new: %s", err);
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    rd_kafka_resp_err_t merr = rd_kafka_metadata(rk, 0, rkt, &md, 30000);
    if (merr || md->topic_cnt != 1 || md->topics[0].err)
        die("metadata of %s: %s", topic, rd_kafka_err2str(merr ? merr : md->topics[0].err));
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(md->topics[0].partition_cnt);
    for (int i = 0; i < md->topics[0].partition_cnt; i++)
        rd_kafka_topic_partition_list_add(parts, topic, md->topics[0].partitions[i].id)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_poll_set_consumer(rk);
    /* records are taken off the consumer queue in batches: one call per record would make the
       client's own per-call cost the ceiling for small records */
    rd_kafka_queue_t *queue = rd_kafka_queue_get_consumer(rk);
    enum { BATCH = 1024 };
    static rd_kafka_message_t *batch[BATCH];

    int64_t start = now_us(), last = start, deadline = start + (int64_t)(wait_s * 1e6);
    rd_kafka_resp_err_t aerr = rd_kafka_assign(rk, parts);
    if (aerr)
        die("assign: %s", rd_kafka_err2str(aerr));
    long n = 0;
    double bytes = 0;
    while (n < records) {
        ssize_t got = rd_kafka_consume_batch_queue(queue, 100, batch, BATCH);
        int64_t t = now_us();
        if (got < 0)
            die("consume: %s", rd_kafka_err2str(rd_kafka_last_error()));
        if (got == 0 && t > deadline)
            die("timed out after %.0f s: %ld of %ld records", wait_s, n, records);
        for (ssize_t i = 0; i < got; i++) {
            rd_kafka_message_t *m = batch[i];
            if (m->err)
                die("consume: %s", rd_kafka_message_errstr(m));
            n++;
            bytes += (double)m->len;
            rd_kafka_message_destroy(m);
        }
        if (got > 0)
            last = t;
    }
    rd_kafka_queue_destroy(queue);
    double seconds = (last - start) / 1e6, cpu = cpu_s();
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(rk);
    printf("{\"mode\": \"consume\", \"librdkafka\": \"%s\", \"records\": %ld, \"bytes\": %.0f, \"seconds\": %.6f, "
           "\"records_per_s\": %.1f, \"mb_per_s\": %.3f, \"cpu_s\": %.3f}\n",
           rd_kafka_version_str(), n, bytes, seconds, n / seconds, bytes / 1e6 / seconds, cpu);
    return 0;
}

static void usage(void) {
    die("usage: rdkperf produce|consume -b HOST:PORT -t TOPIC -n RECORDS [-s SIZE] [-p PRODUCERS] "
        "[-l LINGER_MS] [-B BATCH_BYTES] [-x TRANSACTIONAL_ID_PREFIX] [-T COMMIT_MS] [-w TIMEOUT_S] "
        "[-X key=value]...");
}

int main(int argc, char **argv) {
    if (argc < 2)
        usage();
    const char *mode = argv[1];
    int opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "b:t:n:s:p:l:B:x:T:w:X:")) != -1) {
        switch (opt) {
        case 'b': bootstrap = optarg; break;
        case 't': topic = optarg; break;
        case 'n': records = atol(optarg); break;
        case 's': size = atol(optarg); break;
        case 'p': producers = atol(optarg); break;
        case 'l': linger_ms = optarg; break;
        case 'B': batch_bytes = optarg; break;
        case 'x': txn_prefix = optarg; break;
        case 'T': commit_ms = atol(optarg); break;
        case 'w': wait_s = atof(optarg); break;
        case 'X':
            if (nprops == MAX_PROPS)
                die("too many -X");
            props[nprops++] = optarg;
            break;
        default: usage();
        }
    }
    if (!bootstrap || !topic || records <= 0 || size < 0 || producers <= 0 || commit_ms <= 0)
        usage();
    if (!strcmp(mode, "produce"))
        return produce();
    if (!strcmp(mode, "consume"))
        return consume();
    usage();
    return 2;
}
