import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterClientQuotasOptions;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Admin client's client-quota calls (AdminCommand operations describeClientQuotas and
 * alterClientQuotas), and the command "throttle": a producer and a consumer that report the
 * throttle their metrics saw.
 */
final class QuotaCommands {
    private QuotaCommands() {}

    /** describeClientQuotas(components: [{"entity_type", "match": name|null, "default": bool}] or
     *  none for all, strict): [{"entity": {type: name|null}, "values": {key: value}}] */
    static Object describeClientQuotas(Admin admin, Map<String, Object> args) throws Exception {
        List<ClientQuotaFilterComponent> components = new ArrayList<>();
        for (Object o : Json.list(args.get("components"))) {
            Map<String, Object> c = Json.obj(o);
            String type = (String) c.get("entity_type");
            if (Boolean.TRUE.equals(c.get("default"))) components.add(ClientQuotaFilterComponent.ofDefaultEntity(type));
            else if (c.get("match") == null) components.add(ClientQuotaFilterComponent.ofEntityType(type));
            else components.add(ClientQuotaFilterComponent.ofEntity(type, (String) c.get("match")));
        }
        ClientQuotaFilter filter = Boolean.TRUE.equals(args.get("strict"))
                ? ClientQuotaFilter.containsOnly(components) : ClientQuotaFilter.contains(components);
        List<Object> out = new ArrayList<>();
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : admin.describeClientQuotas(filter).entities().get().entrySet()) {
            out.add(Json.map("entity", new TreeMap<>(e.getKey().entries()), "values", new TreeMap<>(e.getValue())));
        }
        return out;
    }

    /** alterClientQuotas(entries: [{"entity": {type: name|null}, "ops": {key: value|null}}], validate_only) */
    static Object alterClientQuotas(Admin admin, Map<String, Object> args) throws Exception {
        List<ClientQuotaAlteration> alterations = new ArrayList<>();
        for (Object o : Json.list(args.get("entries"))) {
            Map<String, Object> entry = Json.obj(o);
            Map<String, String> entity = new HashMap<>();
            for (Map.Entry<String, Object> e : Json.obj(entry.get("entity")).entrySet()) entity.put(e.getKey(), (String) e.getValue());
            List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
            for (Map.Entry<String, Object> e : Json.obj(entry.get("ops")).entrySet()) {
                ops.add(new ClientQuotaAlteration.Op(e.getKey(), e.getValue() == null ? null : ((Number) e.getValue()).doubleValue()));
            }
            alterations.add(new ClientQuotaAlteration(new ClientQuotaEntity(entity), ops));
        }
        admin.alterClientQuotas(alterations, new AlterClientQuotasOptions().validateOnly(Boolean.TRUE.equals(args.get("validate_only"))))
                .all().get();
        return "ok";
    }

    /**
     * throttle: {"topic", "records": n, "size": bytes, "config": {...}} — a producer sends n records
     * of `size` bytes (acks=all, one at a time), then a consumer reads partition 0 from the start
     * until it has them all or one of its fetches was throttled; prints {"produce_throttle_time_max", "fetch_throttle_time_max", "consumed", "produce_seconds"}.
     */
    static void run(Map<String, Object> req) throws Exception {
        String topic = (String) req.get("topic");
        int n = ((Number) req.get("records")).intValue();
        byte[] value = new byte[((Number) req.get("size")).intValue()];
        Properties p = KafkaDriver.props(req);
        double produceMax;
        long t0 = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, 0, null, value)).get();
            produceMax = metric(producer.metrics(), "producer-metrics", "produce-throttle-time-max");
        }
        double produceSeconds = (System.nanoTime() - t0) / 1e9;
        Properties c = KafkaDriver.props(req);
        c.put("enable.auto.commit", "false");
        c.putIfAbsent("fetch.max.bytes", String.valueOf(value.length + 1024));
        c.putIfAbsent("max.partition.fetch.bytes", String.valueOf(value.length + 1024));
        int consumed = 0;
        double fetchMax;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 60_000;
            fetchMax = 0;
            // until the consumer saw a throttled fetch (a throttled fetch carries no records) or read everything
            while (consumed < n && fetchMax == 0 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(200));
                consumed += recs.count();
                fetchMax = metric(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-throttle-time-max");
            }
        }
        KafkaDriver.emit(Json.map("produce_throttle_time_max", produceMax, "fetch_throttle_time_max", fetchMax,
                "consumed", consumed, "produce_seconds", produceSeconds));
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String group, String name) {
        for (Map.Entry<MetricName, ? extends Metric> e : metrics.entrySet()) {
            if (e.getKey().group().equals(group) && e.getKey().name().equals(name)) {
                Object v = e.getValue().metricValue();
                return v instanceof Number && !Double.isNaN(((Number) v).doubleValue()) ? ((Number) v).doubleValue() : 0.0;
            }
        }
        throw new IllegalStateException("no metric " + group + "/" + name);
    }
}
