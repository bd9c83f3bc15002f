import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.common.Node;

/**
 * DescribeCluster through Kafka's own AdminClient: prints "cluster ID", then one "node ID HOST:PORT"
 * line per broker and "controller ID". Usage: DescribeCluster BOOTSTRAP
 */
public final class DescribeCluster {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    try (Admin admin = Admin.create(props)) {
      DescribeClusterResult cluster = admin.describeCluster();
      System.out.println("cluster " + cluster.clusterId().get());
      for (Node node : cluster.nodes().get()) {
        System.out.println("node " + node.id() + " " + node.host() + ":" + node.port());
      }
      System.out.println("controller " + cluster.controller().get().id());
    }
  }
}
