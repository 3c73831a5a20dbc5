import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.util.HexFormat;

import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.Readable;

/**
 * Kafka's own generated message classes as a codec oracle. Reads lines
 * "<MessageName> <version> <hex>" on stdin; for each, decodes the bytes with
 * org.apache.kafka.common.message.<MessageName>Data, checks every byte was consumed,
 * encodes the object again and prints "OK <hex>" (or "ERR <reason>").
 */
public final class KafkaCodecOracle {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split(" ", -1);
            try {
                Class<?> cls = Class.forName("org.apache.kafka.common.message." + parts[0] + "Data");
                short version = Short.parseShort(parts[1]);
                ByteBuffer buf = ByteBuffer.wrap(hex.parseHex(parts[2]));
                Message message = (Message) cls.getConstructor(Readable.class, short.class)
                    .newInstance(new ByteBufferAccessor(buf), version);
                if (buf.hasRemaining()) {
                    System.out.println("ERR " + buf.remaining() + " bytes left unread");
                } else {
                    ByteBuffer out = MessageUtil.toByteBufferAccessor(message, version).buffer();
                    System.out.println("OK " + hex.formatHex(MessageUtil.byteBufferToArray(out)));
                }
            } catch (Exception e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                System.out.println("ERR " + cause.toString().replace('\n', ' '));
            }
            System.out.flush();
        }
    }
}
