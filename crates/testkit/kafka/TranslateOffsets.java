// MirrorMaker 2's own offset translation, for Strait's interoperability tests: reads the
// `<alias>.checkpoints.internal` topic on the cluster at BOOTSTRAP with
// RemoteClusterUtils.translateOffsets (connect-mirror-client) and prints one line per
// partition: TOPIC<TAB>PARTITION<TAB>OFFSET. Compiled and run by strait-testkit
// (src/kafka/mm2.rs) against the MM2 classpath.
//
// Usage: TranslateOffsets BOOTSTRAP SOURCE_ALIAS GROUP TIMEOUT_MS
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

public class TranslateOffsets {
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: TranslateOffsets BOOTSTRAP SOURCE_ALIAS GROUP TIMEOUT_MS");
            System.exit(2);
        }
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        Map<TopicPartition, OffsetAndMetadata> offsets = RemoteClusterUtils.translateOffsets(
                props, args[1], args[2], Duration.ofMillis(Long.parseLong(args[3])));
        Map<String, Long> sorted = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            sorted.put(e.getKey().topic() + "\t" + e.getKey().partition(), e.getValue().offset());
        }
        for (Map.Entry<String, Long> e : sorted.entrySet()) {
            System.out.println(e.getKey() + "\t" + e.getValue());
        }
    }
}
